import fp from 'fastify-plugin';
import type { Config } from '../../config/config.js';
import type { Logger } from '../../logging/logger.js';
import { carryUntaggedKeys } from '../../redis/key-upgrade.js';
import { createRedisClients, type RedisClients } from '../../redis/redis-clients.js';
import { redisKeys } from '../../redis/redis-keys.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The connections to Redis (REDIS_URL, REDIS_CLUSTER_NODES or REDIS_SENTINELS); undefined runs everything in process. */
    redis: RedisClients | undefined;
  }
}

export const redisPlugin = fp<{ config: Config }>(
  async (app, { config }) => {
    const logger = app.log as Logger;
    const keys = redisKeys(config.redisPrefix);
    const redis = config.redis
      ? createRedisClients(config.redis, { commandTimeoutMs: config.redisCommandTimeoutMs, probeKey: keys.writeProbe, logger })
      : undefined;
    app.decorate('redis', redis);
    // Closed after every feature that uses it (onClose runs in the reverse of the list).
    if (redis) app.addHook('onClose', () => redis.close());
    // Before the event log reads its stream: a deployment's log from before its keys were tagged is taken over, not replayed as new.
    if (redis?.topology === 'standalone') await carryUntaggedKeys(redis, keys, logger);
  },
  { name: 'redis' },
);
