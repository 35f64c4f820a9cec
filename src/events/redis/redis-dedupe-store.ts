import type { DedupeStore } from '../dedupe-store.js';
import type { RedisClients } from '../../redis/redis-clients.js';

/** Dedupe shared by every instance: a key set once, with an expiry, by SET NX PX. */
export function createRedisDedupeStore(clients: RedisClients, prefix: string): DedupeStore {
  return {
    async claim(key, ttlMs) {
      return (await clients.commands.set(`${prefix}dedupe:${key}`, '1', 'PX', ttlMs, 'NX')) === 'OK';
    },
    async release(key) {
      await clients.commands.del(`${prefix}dedupe:${key}`);
    },
  };
}
