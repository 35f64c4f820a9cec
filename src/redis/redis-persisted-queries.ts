import type { Cluster, Redis } from 'ioredis';
import type { RedisKeys } from './redis-keys.js';

/*
 * The texts of persisted queries (APQ) in Redis, so that a text one instance
 * registered is served by hash on every instance. Each expires `ttlMs` after
 * its last registration, and one longer than `maxBytes` is not kept (it is
 * still run: the link sends it again next time). Redis away reads as "not
 * registered": the link then sends the text, which runs as any operation, so
 * an outage costs a round trip, never an error.
 */

export interface PersistedQueryStore {
  get(hash: string): Promise<string | null>;
  set(hash: string, text: string): Promise<void>;
}

export function redisPersistedQueries(
  commands: Redis | Cluster,
  keys: Pick<RedisKeys, 'persistedQuery'>,
  { ttlMs, maxBytes }: { ttlMs: number; maxBytes: number },
): PersistedQueryStore {
  return {
    get: (hash) => commands.get(keys.persistedQuery(hash)).catch(() => null),
    async set(hash, text) {
      if (Buffer.byteLength(text) > maxBytes) return;
      await commands.set(keys.persistedQuery(hash), text, 'PX', ttlMs).catch(() => undefined);
    },
  };
}
