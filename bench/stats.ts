/** Small statistics for the benchmark figures: nearest-rank percentiles over raw samples. */

export interface Spread {
  n: number;
  p50: number;
  p95: number;
  mean: number;
  max: number;
}

/** Nearest-rank percentile: a value that was really observed, never an interpolation. */
export function percentile(xs: readonly number[], p: number): number {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil((p / 100) * s.length));
  return s[rank - 1]!;
}

export function spread(xs: readonly number[], digits = 2): Spread {
  return {
    n: xs.length,
    p50: round(percentile(xs, 50), digits),
    p95: round(percentile(xs, 95), digits),
    mean: round(xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length), digits),
    max: round(Math.max(...xs), digits),
  };
}

export function round(x: number, digits = 2): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}
