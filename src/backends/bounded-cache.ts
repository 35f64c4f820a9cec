import { LRUCache } from 'lru-cache';

/*
 * The one bounded map of the gateway (lru-cache): the entity cache, the
 * response cache's memory of drops and misses, the forward-mode verdicts,
 * the dedupe memory of events and the persisted queries' texts all are one
 * of these. What is handed back is
 * the LRUCache itself, so a read is lru-cache's own `get`, with no wrapper
 * in between (the entity cache is on the path of every cache hit).
 *
 * Two of lru-cache's conventions differ from what the gateway promises, and
 * are adjusted here once:
 * - an entry is stale once its age passes `ttl`, while ours is gone once its
 *   age reaches the TTL (a verdict remembered for 30 s is asked again at
 *   30 s): clocks count whole milliseconds, so lru-cache gets `ttlMs - 1`;
 * - a start time of 0 reads as "no TTL", which a test's clock may well
 *   give: lru-cache's clock runs one millisecond ahead of ours, which moves
 *   every start and every reading alike.
 * Expiry is judged when an entry is read (no timer per entry, no cached
 * clock reading), and the least recently used entry goes first.
 */

export interface BoundedCacheOptions<V> {
  /** Most entries held; past it the least recently used is forgotten. */
  max: number;
  /** How long an entry is served, in whole ms (at least 1); absent: until forgotten for room. */
  ttlMs?: number | undefined;
  /** Clock in whole milliseconds. @default Date.now */
  now?: (() => number) | undefined;
  /** Told of each entry forgotten to make room (not of those replaced, deleted or expired). */
  onEvict?: ((value: V, key: string) => void) | undefined;
  /** A bound on the entries' sizes too (`size` of each, at least 1): past it the least recently used go first. */
  maxSize?: { total: number; size: (value: V) => number } | undefined;
}

export function boundedCache<V extends NonNullable<unknown>>(options: BoundedCacheOptions<V>): LRUCache<string, V> {
  const now = options.now ?? Date.now;
  const onEvict = options.onEvict;
  const { maxSize } = options;
  return new LRUCache<string, V>({
    max: options.max,
    ...(maxSize ? { maxSize: maxSize.total, sizeCalculation: (value: V) => Math.max(1, maxSize.size(value)) } : {}),
    ...(options.ttlMs === undefined
      ? {}
      : { ttl: Math.max(1, options.ttlMs - 1), ttlAutopurge: false, ttlResolution: 0, perf: { now: () => now() + 1 } }),
    ...(onEvict ? { dispose: (value: V, key: string, reason: LRUCache.DisposeReason) => reason === 'evict' && onEvict(value, key) } : {}),
  });
}

/** How long an entry of `cache` is still served, in ms; 0 when it is not held or no longer served. */
export function remainingMs<V extends NonNullable<unknown>>(cache: LRUCache<string, V>, key: string): number {
  // lru-cache counts from the `ttlMs - 1` it was given (above).
  return cache.has(key) ? cache.getRemainingTTL(key) + 1 : 0;
}
