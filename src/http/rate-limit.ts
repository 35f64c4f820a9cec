import { createHash } from 'node:crypto';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import type { Redis } from 'ioredis';
import type { Credential } from '../backends/backend.js';
import { GatewayError } from '../errors.js';

/*
 * Requests per second per API key, in fixed one-second windows
 * (rate-limiter-flexible). With Redis the count is shared by every instance;
 * should Redis fail, each instance falls back to counting alone rather than
 * refusing everyone.
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
}

// Keys are never stored or logged as sent.
const keyOf = (credential: Credential): string => createHash('sha256').update(credential.authorization.replace(/^Bearer\s+/i, '')).digest('hex').slice(0, 32);

export function createRateLimiter(options: RateLimiterOptions): RateLimiter {
  if (options.perSecond <= 0) return { admit: async () => {} };
  const memory = new RateLimiterMemory({ points: options.perSecond, duration: 1 });
  const limiter = options.redis
    ? new RateLimiterRedis({
        storeClient: options.redis,
        keyPrefix: `${options.prefix ?? 'vending-gateway:'}rate`,
        points: options.perSecond,
        duration: 1,
        insuranceLimiter: memory,
      })
    : memory;
  return {
    async admit(credential) {
      try {
        await limiter.consume(keyOf(credential));
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
