/*
 * Remembers which webhooks were already published, so a redelivery is
 * answered 200 and not published again (DESIGN §5). Senders retry for a day or
 * more, so ids are kept for at least 24 hours, bounded in count.
 */

export interface DedupeStore {
  /** True the first time `key` is seen within `ttlMs`; false for a repeat. */
  claim(key: string, ttlMs: number): Promise<boolean>;
  /** Forgets a claim whose event could not be published, so a retry is accepted. */
  release(key: string): Promise<void>;
}

export interface MemoryDedupeOptions {
  /** Most keys remembered; the oldest is forgotten first. @default 100000 */
  maxEntries?: number;
  /** @default Date.now */
  now?: () => number;
}

export function createMemoryDedupeStore(options: MemoryDedupeOptions = {}): DedupeStore {
  const maxEntries = options.maxEntries ?? 100_000;
  const now = options.now ?? Date.now;
  // Insertion order is age order: re-claiming deletes first, so the first key is the oldest.
  const expiries = new Map<string, number>();

  return {
    async claim(key, ttlMs) {
      const at = now();
      const expiry = expiries.get(key);
      if (expiry !== undefined && expiry > at) return false;
      expiries.delete(key);
      expiries.set(key, at + ttlMs);
      if (expiries.size > maxEntries) expiries.delete(expiries.keys().next().value as string);
      return true;
    },
    async release(key) {
      expiries.delete(key);
    },
  };
}
