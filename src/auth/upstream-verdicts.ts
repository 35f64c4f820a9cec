import { hash } from 'node:crypto';
import type { LRUCache } from 'lru-cache';
import { boundedCache, remainingMs } from '../backends/bounded-cache.js';
import { refuse } from '../refusals/refusals.js';

/*
 * What forward mode's questions to the service have in common: whether it
 * accepts a client's key (upstream-key-check.ts), and whether a key may read
 * an account's transactions (account-access.ts). Both are asked with the
 * client's own key, so each answer (a verdict) is kept under a digest of the
 * key, never the key; it is remembered for a period, at most so many of them
 * (the least recently used forgotten first); concurrent asks for one verdict
 * share one upstream call; an ask that gets no verdict (the service failed)
 * leaves nothing behind, so the next ask tries again; and an instance starts
 * at most so many asks in any one second, so a flood of made-up keys is not
 * a flood upstream.
 */

/** How a client's `Authorization` is named in what the gateway remembers: its SHA-256, never the key. */
export const keyDigest = (authorization: string): string => hash('sha256', authorization, 'base64');

export interface CheckLimit {
  /**
   * Counts one upstream check starting now; throws a request-failing RATE_LIMITED (with Retry-After) when the second's allowance is spent.
   */
  admit(): void;
}

/** At most `checksPerSecond` checks started in any one second (sliding), wherever they start from. */
export function createCheckLimit(checksPerSecond: number, now: () => number = Date.now): CheckLimit {
  // When each of the last `checksPerSecond` checks started, as a ring: a new one may start once the oldest is a second old.
  const started: number[] = new Array<number>(checksPerSecond).fill(Number.NEGATIVE_INFINITY);
  let oldest = 0;
  return {
    admit() {
      const at = now();
      const wait = started[oldest]! + 1_000 - at;
      if (wait > 0) {
        throw refuse.tooManyKeyChecks(checksPerSecond, String(Math.max(1, Math.ceil(wait / 1_000))));
      }
      started[oldest] = at;
      oldest = (oldest + 1) % checksPerSecond;
    },
  };
}

export interface VerdictsOptions {
  /** How long a verdict is remembered. */
  ttlMs: number;
  /** Most verdicts remembered; past it the least recently used is forgotten. */
  maxEntries: number;
  /** Counts the asks that `ask(…, true)` starts. */
  limit: CheckLimit;
  now?: (() => number) | undefined;
}

export interface Verdicts<V extends NonNullable<unknown>> {
  /** The verdict remembered under `key` (a name made from `keyDigest`), if it is still served. */
  get(key: string): V | undefined;
  /**
   * The verdict `judge` gives, remembered under `key`; an ask already under
   * way for `key` is joined instead. `judge` rejects when it gets no verdict:
   * nothing is remembered then. `limited`: a new ask counts against the
   * limit, and is refused (RATE_LIMITED) past it.
   */
  ask(key: string, judge: () => Promise<V>, limited: boolean): Promise<V>;
  /** How long the verdict under `key` is still served, in ms (0 when none is). */
  remainingMs(key: string): number;
}

/** How long after a failed ask a refusal by the limit is told as the service's failure. */
const FAILING_FOR_MS = 10_000;

export function createVerdicts<V extends NonNullable<unknown>>(options: VerdictsOptions): Verdicts<V> {
  const { limit } = options;
  const now = options.now ?? Date.now;
  const held: LRUCache<string, V> = boundedCache<V>({ max: options.maxEntries, ttlMs: options.ttlMs, now: options.now });
  const inFlight = new Map<string, Promise<V>>();
  /** When the last ask settled without a verdict (the service failed), while no later ask got one. */
  let failedAt: number | undefined;
  return {
    get: (key) => held.get(key),
    ask(key, judge, limited) {
      const pending = inFlight.get(key);
      if (pending) return pending;
      try {
        if (limited) limit.admit();
      } catch (error) {
        // Asks that get no verdict spend the limit too; while the service is failing, the truth is its failure,
        // not "too many checks" (a valid key would be told to slow down for an outage).
        if (failedAt !== undefined && now() - failedAt < FAILING_FOR_MS) {
          return Promise.reject(refuse.keyChecksFailing());
        }
        return Promise.reject(error);
      }
      const shared = judge()
        .then(
          (verdict) => {
            failedAt = undefined;
            held.set(key, verdict);
            return verdict;
          },
          (error: unknown) => {
            failedAt = now();
            throw error;
          },
        )
        .finally(() => inFlight.delete(key));
      inFlight.set(key, shared);
      return shared;
    },
    remainingMs: (key) => remainingMs(held, key),
  };
}
