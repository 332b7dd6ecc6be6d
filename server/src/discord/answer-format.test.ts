import { describe, expect, it } from 'vitest';
import { answerParts, MESSAGE_LIMIT, sourcesBlock, splitMessage, usageFooter } from './answer-format.ts';

const words = (text: string) => text.replace(/```\w*/g, ' ').split(/\s+/).filter(Boolean);
const paragraph = (n: number, length: number) => `Paragraph ${n}: ` + 'the panel moves to Hall B after lunch. '.repeat(Math.ceil(length / 39)).slice(0, length - 13).trim() + '.';

describe('splitting an answer into Discord messages', () => {
  it('keeps a short answer whole', () => {
    expect(splitMessage('  Hall B, Saturday 19:00.  ')).toEqual(['Hall B, Saturday 19:00.']);
  });

  it('splits a long answer at paragraph breaks, every part within the limit, nothing lost', () => {
    const text = [paragraph(1, 900), paragraph(2, 900), paragraph(3, 800)].join('\n\n');
    expect(text.length).toBeGreaterThan(2600);
    const parts = splitMessage(text);
    expect(parts).toHaveLength(2);
    for (const part of parts) expect(part.length).toBeLessThanOrEqual(MESSAGE_LIMIT);
    expect(parts[0]!.endsWith('.')).toBe(true);
    expect(parts[1]!.startsWith('Paragraph 3:')).toBe(true);
    expect(parts.join('\n\n')).toBe(text);
  });

  it('splits a paragraph longer than a message at its lines, and a line longer than a message between sentences and words', () => {
    const lines = Array.from({ length: 60 }, (_, i) => `- Event ${i + 1}: Hall ${i % 5}, Saturday ${10 + (i % 8)}:00`).join('\n');
    const lineParts = splitMessage(lines);
    expect(lineParts.length).toBeGreaterThan(1);
    for (const part of lineParts) {
      expect(part.length).toBeLessThanOrEqual(MESSAGE_LIMIT);
      expect(part.split('\n').every((line) => /^- Event \d+: Hall \d, Saturday \d+:00$/.test(line))).toBe(true);
    }
    expect(lineParts.join('\n')).toBe(lines);

    const long = 'Every word stays whole when a line is longer than a message. '.repeat(80).trim();
    const parts = splitMessage(long);
    for (const part of parts) expect(part.length).toBeLessThanOrEqual(MESSAGE_LIMIT);
    expect(words(parts.join(' '))).toEqual(words(long));
  });

  it('closes a code block at the end of a part and opens it again in the next', () => {
    const code = ['```text', ...Array.from({ length: 120 }, (_, i) => `room ${i}: open 09:00 to 18:00`), '```'].join('\n');
    const parts = splitMessage(`Opening hours:\n\n${code}`);
    expect(parts.length).toBeGreaterThan(1);
    for (const part of parts) {
      expect(part.length).toBeLessThanOrEqual(MESSAGE_LIMIT);
      expect(part.match(/```/g)!.length % 2).toBe(0);
    }
    expect(parts[1]!.startsWith('```text\n')).toBe(true);
  });

  it('puts the sources and the usage footer under the answer, in its last part', () => {
    const quota = { limit6h: 10, limit24h: 40, used6h: 3, used24h: 3, available: 7, availableAt: null };
    const sources = [
      { kind: 'event' as const, title: 'Costume Contest', starts_at: '2026-03-14T19:00:00-05:00', location: 'Main Stage' },
      { kind: 'file' as const, title: 'Convention schedule' },
    ];
    expect(sourcesBlock(sources, 'America/Chicago')).toBe('-# Sources: Costume Contest (Sat 14 Mar, 19:00 CDT, Main Stage) · Convention schedule');
    expect(usageFooter(quota)).toBe('-# 7 of 10 questions left in the next 6 h');
    expect(usageFooter({ ...quota, available: 2 })).toBe('-# 7 of 10 questions left in the next 6 h (2 left in 24 h)');

    const parts = answerParts({ text: [paragraph(1, 1500), paragraph(2, 1100)].join('\n\n'), sources }, { timeZone: 'America/Chicago', quota });
    expect(parts).toHaveLength(2);
    expect(parts[1]).toContain('\n\n-# Sources: Costume Contest');
    expect(parts[1]!.endsWith('-# 7 of 10 questions left in the next 6 h')).toBe(true);
  });
});
