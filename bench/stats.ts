// The statistics every bench prints: nearest-rank quantiles over the measured values (no
// interpolation), so a printed median is a value that was measured. For an even count the median
// is the lower of the two middle values.

/** The nearest-rank `q` quantile (0 < q ≤ 1) of `xs`; NaN when there are none. */
export function quantile(xs: readonly number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))] ?? Number.NaN;
}

export const median = (xs: readonly number[]): number => quantile(xs, 0.5);
