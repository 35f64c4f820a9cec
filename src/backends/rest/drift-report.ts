import type { Drift } from '../../contract/contract.js';

/*
 * What the gateway says of a service that drifts from the contract: every
 * drifted field is counted, and each kind of drift (resource, field, kind)
 * is logged at most once per period, so a service that drifts on every
 * answer fills neither the log nor the disk. The keys are the contract's own
 * resources and fields, so the map of last lines stays small.
 */

export interface DriftReportOptions {
  /** Counts one drift (the metric). */
  count(drift: Drift): void;
  /** Writes the warning of one kind of drift; `route` is the contract's path template of the call that met it. */
  warn(drift: Drift, route: string): void;
  /** Least time between two warnings of one kind of drift, in ms. @default 60000 */
  everyMs?: number;
  /** @default Date.now */
  now?: () => number;
}

export function createDriftReport({
  count,
  warn,
  everyMs = 60_000,
  now = Date.now,
}: DriftReportOptions): (drifts: readonly Drift[], route: string) => void {
  const lastWarned = new Map<string, number>();
  return (drifts, route) => {
    for (const drift of drifts) {
      count(drift);
      const key = `${drift.resource}\u0000${drift.field}\u0000${drift.kind}`;
      const at = now();
      const last = lastWarned.get(key);
      if (last !== undefined && at - last < everyMs) continue;
      lastWarned.set(key, at);
      warn(drift, route);
    }
  };
}
