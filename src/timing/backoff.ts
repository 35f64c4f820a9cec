/*
 * How long to wait before trying again, for every retry of the gateway (the
 * service's answers, Redis reconnections, a subscriber's reads): twice as long
 * after each failure, up to a ceiling, and spread by a random share so that
 * many waiting for one thing do not all ask again at the same moment.
 */

export interface Backoff {
  /** The wait before the second try (ms). */
  firstMs: number;
  /** The longest wait (ms); @default no ceiling */
  mostMs?: number;
  /** The random share added, 0 to 1 of the wait (0.5: up to half again); @default 0 */
  jitter?: number;
}

/** The wait after the `failures`-th failure in a row (1 for the first). */
export function backoffDelay(failures: number, { firstMs, mostMs = Number.POSITIVE_INFINITY, jitter = 0 }: Backoff): number {
  return Math.min(firstMs * 2 ** (failures - 1), mostMs) * (1 + Math.random() * jitter);
}
