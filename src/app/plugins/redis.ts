import fp from 'fastify-plugin';
import type { Config } from '../../config/index.js';
import type { Logger } from '../../logging/logger.js';
import { createRedisClients, type RedisClients } from '../../redis/redis-clients.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The connections to Redis with REDIS_URL; undefined runs everything in process. */
    redis: RedisClients | undefined;
  }
}

export const redisPlugin = fp<{ config: Config }>(
  async (app, { config }) => {
    const redis = config.redisUrl ? createRedisClients(config.redisUrl, { commandTimeoutMs: config.redisCommandTimeoutMs, logger: app.log as Logger }) : undefined;
    app.decorate('redis', redis);
    // Closed after every feature that uses it (onClose runs in the reverse of the list).
    if (redis) app.addHook('onClose', () => redis.close());
  },
  { name: 'redis' },
);
