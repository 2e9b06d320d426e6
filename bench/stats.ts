/** Nearest-rank percentile of a sample (p in 0..100). */
export function percentile(sample: readonly number[], p: number): number {
  if (sample.length === 0) return Number.NaN;
  const sorted = [...sample].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
}

export const median = (sample: readonly number[]): number => percentile(sample, 50);

export const round = (value: number, digits = 1): number => Number(value.toFixed(digits));

/** A ratio as a percentage, or a multiple, rounded for the table. */
export const ratio = (value: number, reference: number): number => round(value / reference, 2);

/** A latency sample (ms) as the tables show it: p50, p95 and the worst, whole ms. */
export const spread = (sample: readonly number[]) => ({
  p50Ms: round(median(sample), 0),
  p95Ms: round(percentile(sample, 95), 0),
  maxMs: round(Math.max(...sample), 0),
});

export type Spread = ReturnType<typeof spread>;
