import type { Cluster, Redis } from 'ioredis';

/*
 * Subscription tokens in Redis (the shape of auth's TokenStore): every
 * instance of a deployment sees a token minted by any, and GETDEL lets one
 * stream only take it. Each token is one key of its own, with its expiry.
 */
export function redisTokenStore(redis: Redis | Cluster) {
  return {
    async put(id: string, value: string, ttlMs: number): Promise<void> {
      await redis.set(id, value, 'PX', ttlMs);
    },
    async take(id: string): Promise<string | undefined> {
      return (await redis.getdel(id)) ?? undefined;
    },
  };
}
