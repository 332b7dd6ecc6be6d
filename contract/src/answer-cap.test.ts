import { describe, expect, it } from 'vitest';
import { ANSWER_MAX_LENGTH, ANSWER_TRUNCATED_MARK, answerKeptLength, capAnswer } from './chat-constants.ts';

describe('capAnswer', () => {
  it('leaves an answer up to the maximum as it is', () => {
    const exactly = 'x'.repeat(ANSWER_MAX_LENGTH);
    expect(capAnswer(exactly)).toBe(exactly);
    expect(capAnswer('short')).toBe('short');
  });

  it('cuts a longer one under the maximum and marks it', () => {
    const long = 'word '.repeat(500_000);
    const capped = capAnswer(long);
    expect(capped.length).toBeLessThanOrEqual(ANSWER_MAX_LENGTH);
    expect(capped.endsWith(`\n\n${ANSWER_TRUNCATED_MARK}`)).toBe(true);
    expect(long.startsWith(capped.slice(0, answerKeptLength(long)))).toBe(true);
    expect(capAnswer(capped)).toBe(capped);
  });

  it('never keeps half of a surrogate pair, and closes a code block left open', () => {
    const keep = answerKeptLength('x'.repeat(ANSWER_MAX_LENGTH * 2));
    const emoji = `${'x'.repeat(keep - 1)}😀${'y'.repeat(ANSWER_MAX_LENGTH)}`;
    const capped = capAnswer(emoji);
    expect(capped.isWellFormed()).toBe(true);
    expect(capped.startsWith(`${'x'.repeat(keep - 1)}\n\n`)).toBe(true);

    const code = `Here:\n\n\`\`\`js\n${'let a = 1;\n'.repeat(20_000)}`;
    expect(capAnswer(code).endsWith(`\n\`\`\`\n\n${ANSWER_TRUNCATED_MARK}`)).toBe(true);
    expect(capAnswer(code).length).toBeLessThanOrEqual(ANSWER_MAX_LENGTH);
  });
});
