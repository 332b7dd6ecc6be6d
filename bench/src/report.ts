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
  /** The ratio must not exceed this (times, sizes). */
  maxRatio?: number;
  /** The ratio must reach at least this (throughput). */
  minRatio?: number;
  /** An absolute target the value must not exceed (a figure an issue sets), beside the ratio. */
  maxValue?: number;
  /** An absolute target the value must reach (a score an issue sets). */
  minValue?: number;
  notes?: string[];
}

/** Nearest-rank percentile (`p` from 0 to 1) of unsorted values; NaN for none. */
export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)] ?? Number.NaN;
}

export const passed = (result: BenchResult) =>
  (result.maxRatio === undefined || result.ratio <= result.maxRatio) &&
  (result.minRatio === undefined || result.ratio >= result.minRatio) &&
  (result.maxValue === undefined || result.value <= result.maxValue) &&
  (result.minValue === undefined || result.value >= result.minValue);

const fmt = (n: number) => (Number.isInteger(n) ? n.toLocaleString('en-US') : n.toFixed(2));

/** An upper bound on the ratio that binds (an infinite one is a comparison only, beside an absolute target). */
const boundsRatioAbove = (result: BenchResult) => result.maxRatio !== undefined && Number.isFinite(result.maxRatio);

const targetText = (result: BenchResult) =>
  [
    result.maxValue !== undefined ? `≤ ${fmt(result.maxValue)} ${result.unit}` : '',
    result.minValue !== undefined ? `≥ ${fmt(result.minValue)} ${result.unit}` : '',
    boundsRatioAbove(result) ? `ratio ≤ ${result.maxRatio}` : '',
    result.minRatio !== undefined ? `ratio ≥ ${result.minRatio}` : '',
  ]
    .filter(Boolean)
    .join(' and ');

/** A ratio target bounds the ratio; an absolute one (an issue's figure) bounds the value, and the ratio is then only a comparison. */
const verdictLine = (result: BenchResult) => {
  const missed = passed(result) ? '' : ' — missed';
  const bindsRatio = boundsRatioAbove(result) || result.minRatio !== undefined;
  return bindsRatio
    ? `      ratio ${result.ratio.toFixed(3)} (target ${targetText(result)})${missed}`
    : `      ${fmt(result.value)} ${result.unit} (target ${targetText(result)})${missed}; ${result.ratio.toFixed(3)}× the baseline`;
};

export function formatResult(result: BenchResult): string {
  return [
    `${passed(result) ? 'PASS' : 'FAIL'}  ${result.name}`,
    `      ${result.measure}: ${fmt(result.value)} ${result.unit}`,
    `      baseline (${result.baselineMeasure}): ${fmt(result.baseline)} ${result.unit}`,
    verdictLine(result),
    ...(result.notes ?? []).map((note) => `      ${note}`),
  ].join('\n');
}
