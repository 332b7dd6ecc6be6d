/**
 * Go-style duration text ("3s", "1m30s", "500ms", "1.5h"), the format the
 * runtime configuration uses for poll intervals.
 */
const UNIT_MS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

const PART = /(\d+(?:\.\d+)?|\.\d+)(ns|us|µs|ms|s|m|h)/y;

/** Milliseconds for a duration text, or `null` when the text is not a duration. */
export function parseDuration(text: string): number | null {
  const input = text.trim();
  if (input === '' || input === '0') return input === '0' ? 0 : null;
  let total = 0;
  PART.lastIndex = 0;
  while (PART.lastIndex < input.length) {
    const start = PART.lastIndex;
    const match = PART.exec(input);
    if (!match || match.index !== start) return null;
    total += Number(match[1]) * UNIT_MS[match[2]!]!;
  }
  return total;
}

/** Shortest Go-style text for a whole number of milliseconds ("1m30s", "250ms"). */
export function formatDuration(ms: number): string {
  if (ms === 0) return '0s';
  let rest = Math.round(ms);
  let text = '';
  for (const [unit, size] of [['h', 3_600_000], ['m', 60_000], ['s', 1000]] as const) {
    if (rest >= size) {
      text += `${Math.floor(rest / size)}${unit}`;
      rest %= size;
    }
  }
  if (rest > 0) text += `${rest}ms`;
  return text;
}
