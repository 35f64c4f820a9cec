import * as hdr from 'hdr-histogram-js';

/** Percentiles (0–100) of one list of latencies in ms, recorded once; NaN when there are none. */
export function percentiles(valuesMs: Iterable<number>, ps: readonly number[]): number[] {
  const histogram = hdr.build({ lowestDiscernibleValue: 1, numberOfSignificantValueDigits: 3 });
  let endless = 0;
  for (const ms of valuesMs) {
    if (ms === Number.POSITIVE_INFINITY) endless += 1;
    else if (!Number.isNaN(ms)) histogram.recordValue(Math.max(0, Math.round(ms * 1_000)));
  }
  const finite = histogram.totalCount;
  return ps.map((p) => {
    const rank = Math.max(1, Math.ceil((p / 100) * (finite + endless)));
    if (finite + endless === 0) return Number.NaN;
    return rank > finite ? Number.POSITIVE_INFINITY : histogram.getValueAtPercentile(Math.min(100, (rank / finite) * 100)) / 1_000;
  });
}

/** The middle of a few runs' figures (the mean of the two middle ones for an even count); NaN values left out. */
export function median(values: readonly number[]): number {
  const sorted = values.filter((v) => !Number.isNaN(v)).sort((a, b) => a - b);
  const mid = sorted.length / 2;
  if (sorted.length === 0) return Number.NaN;
  return sorted.length % 2 === 0 ? (sorted[mid - 1]! + sorted[mid]!) / 2 : sorted[Math.floor(mid)]!;
}

export const fmt = (value: number, digits = 0): string =>
  Number.isFinite(value) ? value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits }) : 'n/a';
