import fp from 'fastify-plugin';
import type { FastifyRequest } from 'fastify';
import type { Credential } from '../../backends/backend.js';
import { createAuthenticator, requestGuard, type Authenticator } from '../../auth/authenticator.js';
import { createJwtVerifier, type JwtVerifier } from '../../auth/jwt-verifier.js';
import { createKeyStore, type KeyStore } from '../../auth/key-store.js';
import { createSubscriptionTokens, memoryTokenStore, streamTokenOf, type SubscriptionTokens } from '../../auth/subscription-tokens.js';
import { createForwardKeyCheck } from '../../auth/upstream-key-check.js';
import { ConfigError, type Config } from '../../config/config.js';
import { createRateLimiter, type RateLimiter } from '../../http/rate-limit.js';
import type { Logger } from '../../logging/logger.js';
import { redisKeys } from '../../redis/redis-keys.js';
import { redisTokenStore } from '../../redis/redis-token-store.js';

/*
 * Who may ask: the gateway's keys (API_KEYS and the watched key file), JWTs,
 * or in forward mode the service's verdict on each client's own key; then
 * the rate limit per identity. Routes that need a key take `auth.guard`.
 */

export interface Auth {
  authenticator: Authenticator;
  rateLimiter: RateLimiter;
  /** The front door's guard for routes that need a key: authentication, then the rate limit. */
  guard(request: FastifyRequest): Promise<void>;
  /** Short-lived, single-use tokens that start one SSE subscription (a browser's EventSource sends no key). */
  subscriptionTokens: SubscriptionTokens;
  /** `guard`, except that an SSE GET without a key may present a subscription token (`?token=`) instead. */
  streamGuard(request: FastifyRequest): Promise<void>;
  /** Re-reads API_KEYS_FILE and forgets the fetched JWKS (SIGHUP). */
  reloadIdentities(): void;
}

declare module 'fastify' {
  interface FastifyInstance {
    auth: Auth;
  }
}

/** The gateway's keys; a key file it cannot use stops it from starting, in one line naming the variable. */
function keyStoreOf(config: Config, logger: Logger): KeyStore {
  try {
    return createKeyStore({ entries: config.apiKeys, file: config.apiKeysFile, logger });
  } catch (error) {
    throw new ConfigError('API_KEYS_FILE', `a readable file of key entries (${(error as Error).message})`, undefined);
  }
}

export const authPlugin = fp<{ config: Config }>(
  async (app, { config }) => {
    const logger = app.log as Logger;
    const keyCheck = createForwardKeyCheck(config, app.upstream);
    // In forward mode the service judges each client's own key: the gateway keeps none.
    const keys = config.forwardMode ? undefined : keyStoreOf(config, logger);
    const jwt: JwtVerifier | undefined = config.jwt && createJwtVerifier(config.jwt);
    const authenticator = createAuthenticator({ keys, jwt, upstream: keyCheck, keysChange: config.apiKeysFile !== undefined });
    const rateLimiter = createRateLimiter({
      perSecond: config.rateLimitPerSecond,
      redis: app.redis?.commands,
      prefix: redisKeys(config.redisPrefix).rateLimitPrefix,
      logger,
    });
    const admit = (credential: Credential) => rateLimiter.admit(credential);
    const guard = requestGuard(authenticator, admit);
    // With Redis a token minted by one instance starts a stream on any; without it, on this one only.
    const store = app.redis ? redisTokenStore(app.redis.commands) : memoryTokenStore();
    const subscriptionTokens = createSubscriptionTokens({ store, ttlMs: config.subscriptionTokenTtlMs, prefix: config.redisPrefix });
    app.decorate('auth', {
      authenticator,
      rateLimiter,
      guard,
      subscriptionTokens,
      async streamGuard(request) {
        const token = streamTokenOf(request);
        if (token === undefined) return guard(request);
        const credential = await subscriptionTokens.redeem(token);
        await admit(credential);
        request.scope.credential = credential;
        request.scope.bySubscriptionToken = true;
      },
      reloadIdentities() {
        keys?.reload();
        jwt?.reload();
      },
    } satisfies Auth);
    app.addHook('preClose', async () => {
      keyCheck?.close();
      keys?.close();
    });
  },
  { name: 'auth', dependencies: ['backend', 'redis'] },
);
