import { createHash } from 'node:crypto';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import type { Redis } from 'ioredis';
import type { Credential } from '../backends/backend.js';
import { GatewayError } from '../errors.js';
import type { Logger } from '../logging.js';

/*
 * Requests per second per API key, in fixed one-second windows
 * (rate-limiter-flexible). With Redis the count is shared by every instance;
 * while Redis fails or does not answer (its commands time out, or its
 * connection is down and the count is not even asked), each instance counts
 * alone rather than refusing everyone or making requests wait: it fails
 * open to its own count, with a warning once per outage.
 */

export interface RateLimiter {
  /** Counts one request; throws RATE_LIMITED (with Retry-After) over the limit. */
  admit(credential: Credential): Promise<void>;
}

export interface RateLimiterOptions {
  perSecond: number;
  /** Shares counts through this Redis when given. */
  redis?: Redis | undefined;
  /** @default 'vending-gateway:' */
  prefix?: string;
  /** Told when this instance starts counting alone, and when the shared count is back. */
  logger?: Logger;
}

// Keys are never stored or logged as sent.
const keyOf = (credential: Credential): string => createHash('sha256').update(credential.authorization.replace(/^Bearer\s+/i, '')).digest('hex').slice(0, 32);

/** Counts one request under `key`; rejects with a RateLimiterRes over the limit. */
type Count = (key: string) => Promise<unknown>;

/** The shared count, or this instance's own while the shared one cannot be had. */
function sharedOrAlone(redis: Redis, options: RateLimiterOptions, alone: RateLimiterMemory): Count {
  const shared = new RateLimiterRedis({
    storeClient: redis,
    keyPrefix: `${options.prefix ?? 'vending-gateway:'}rate`,
    points: options.perSecond,
    duration: 1,
    // Not ready (reconnecting after a stall): straight to the fallback, without a command that would wait.
    rejectIfRedisNotReady: true,
  });
  let countingAlone = false;
  const sharedAnswered = () => {
    if (countingAlone) options.logger?.info('Rate limits are shared through Redis again');
    countingAlone = false;
  };
  return async (key) => {
    try {
      await shared.consume(key);
    } catch (error) {
      if (error instanceof RateLimiterRes) {
        sharedAnswered();
        throw error;
      }
      if (!countingAlone) options.logger?.warn({ err: error }, 'Rate limits are counted by this instance alone: Redis does not answer');
      countingAlone = true;
      return alone.consume(key);
    }
    return sharedAnswered();
  };
}

export function createRateLimiter(options: RateLimiterOptions): RateLimiter {
  if (options.perSecond <= 0) return { admit: async () => {} };
  const memory = new RateLimiterMemory({ points: options.perSecond, duration: 1 });
  const count: Count = options.redis ? sharedOrAlone(options.redis, options, memory) : (key) => memory.consume(key);
  return {
    async admit(credential) {
      try {
        await count(keyOf(credential));
      } catch (rejection) {
        if (!(rejection instanceof RateLimiterRes)) throw rejection;
        const retryAfter = String(Math.max(1, Math.ceil(rejection.msBeforeNext / 1000)));
        throw new GatewayError('RATE_LIMITED', `Too many requests for this API key: at most ${options.perSecond} a second`, {
          failsRequest: true,
          headers: { 'retry-after': retryAfter },
        });
      }
    },
  };
}
