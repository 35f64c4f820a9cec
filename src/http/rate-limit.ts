import { createHash } from 'node:crypto';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import type { Cluster, Redis } from 'ioredis';
import type { Credential } from '../backends/backend.js';
import { refuse } from '../refusals/refusals.js';
import type { Logger } from '../logging/logger.js';

/*
 * Requests per second per identity (an API key, a token's subject), in fixed one-second windows
 * (rate-limiter-flexible). With Redis the count is shared by every instance;
 * while Redis fails or does not answer (its commands time out, or its
 * connection is down and the count is not even asked), the limit fails open:
 * requests are admitted, with a warning once per outage, rather than refused
 * or made to wait for a Redis that may not come back soon.
 */

export interface RateLimiter {
  /** Counts one request; throws RATE_LIMITED (with Retry-After) over the limit. */
  admit(credential: Credential): Promise<void>;
}

export interface RateLimiterOptions {
  perSecond: number;
  /** Shares counts through this Redis when given: one server, or a cluster (each identity's count is one key, on the shard of its slot). */
  redis?: Redis | Cluster | undefined;
  /** Starts every key in Redis (redis-keys.ts `rateLimitPrefix`). */
  prefix: string;
  /** Told when the limit starts failing open, and when the shared count is back. */
  logger?: Logger;
}

// Counted per identity (all the tokens of one subject share a count); keys are never stored or logged as sent.
const keyOf = (credential: Credential): string =>
  credential.identity?.id ?? createHash('sha256').update(credential.authorization).digest('hex').slice(0, 32);

/** Counts one request under `key`; rejects with a RateLimiterRes over the limit. */
type Count = (key: string) => Promise<unknown>;

/** The shared count; admits everything while it cannot be had. */
function sharedOrOpen(redis: Redis | Cluster, options: RateLimiterOptions): Count {
  const shared = new RateLimiterRedis({
    storeClient: redis,
    keyPrefix: options.prefix,
    points: options.perSecond,
    duration: 1,
    // Not ready (reconnecting after a stall): admitted at once, without a command that would wait.
    rejectIfRedisNotReady: true,
  });
  let open = false;
  const sharedAnswered = () => {
    if (open) options.logger?.info('Rate limits are counted through Redis again');
    open = false;
  };
  return async (key) => {
    try {
      await shared.consume(key);
    } catch (error) {
      if (error instanceof RateLimiterRes) {
        sharedAnswered();
        throw error;
      }
      if (!open) options.logger?.warn({ err: error }, 'Rate limits are not enforced (failing open): Redis does not answer');
      open = true;
      return;
    }
    sharedAnswered();
  };
}

export function createRateLimiter(options: RateLimiterOptions): RateLimiter {
  if (options.perSecond <= 0) return { admit: async () => {} };
  let count: Count;
  if (options.redis) {
    count = sharedOrOpen(options.redis, options);
  } else {
    const memory = new RateLimiterMemory({ points: options.perSecond, duration: 1 });
    count = (key) => memory.consume(key);
  }
  return {
    async admit(credential) {
      try {
        await count(keyOf(credential));
      } catch (rejection) {
        if (!(rejection instanceof RateLimiterRes)) throw rejection;
        const retryAfter = String(Math.max(1, Math.ceil(rejection.msBeforeNext / 1000)));
        throw refuse.rateLimited(options.perSecond, retryAfter);
      }
    },
  };
}
