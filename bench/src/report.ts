/** One benchmark's outcome: a measured value against a baseline measured in the same run. */
export interface BenchResult {
  name: string;
  /** What was measured, e.g. "gzipped JS the chat page loads first". */
  measure: string;
  value: number;
  baseline: number;
  /** What the baseline is, e.g. "gzipped JS of the whole app". */
  baselineMeasure: string;
  unit: string;
  /** value / baseline */
  ratio: number;
  /** The ratio must not exceed this. */
  maxRatio: number;
  /** An absolute target the value must not exceed (a figure an issue sets), beside the ratio. */
  maxValue?: number;
  notes?: string[];
}

export const passed = (result: BenchResult) => result.ratio <= result.maxRatio && (result.maxValue === undefined || result.value <= result.maxValue);

export function formatResult(result: BenchResult): string {
  const fmt = (n: number) => (Number.isInteger(n) ? n.toLocaleString('en-US') : n.toFixed(2));
  return [
    `${passed(result) ? 'PASS' : 'FAIL'}  ${result.name}`,
    `      ${result.measure}: ${fmt(result.value)} ${result.unit}`,
    `      baseline (${result.baselineMeasure}): ${fmt(result.baseline)} ${result.unit}`,
    result.maxValue === undefined
      ? `      ratio ${result.ratio.toFixed(3)} (target ≤ ${result.maxRatio})`
      : `      target ≤ ${fmt(result.maxValue)} ${result.unit}${Number.isFinite(result.maxRatio) ? ` and ratio ≤ ${result.maxRatio}` : ''} (ratio ${result.ratio.toFixed(3)})`,
    ...(result.notes ?? []).map((note) => `      ${note}`),
  ].join('\n');
}
