import type { FastifyReply, FastifyRequest } from 'fastify';
import type { SubscriptionTokens } from '../auth/subscription-tokens.js';
import { dataEnvelope } from '../contract/contract.js';
import { originMatcher } from '../graphql/cors.js';
import type { Route } from '../http/front-door.js';

/*
 * POST /subscription-tokens: a page that holds a key (with `subscribe`) gets
 * a token that starts one SSE subscription (`GET /graphql?query=…&token=…`),
 * since a browser's EventSource cannot send `Authorization`. The answer is
 * never cached. Pages of the origins /graphql takes (CORS_ORIGINS) may ask
 * from their own origin, as they may ask /graphql.
 */

export const SUBSCRIPTION_TOKENS_PATH = '/subscription-tokens';

export interface SubscriptionTokenRouteOptions {
  tokens: SubscriptionTokens;
  /** The front door's guard for routes that need a key. */
  guard(request: FastifyRequest): Promise<void>;
  /** The origins whose pages may ask (CORS_ORIGINS, as for /graphql). */
  corsOrigins: readonly string[];
}

export function subscriptionTokenRoutes({ tokens, guard, corsOrigins }: SubscriptionTokenRouteOptions): Route[] {
  const allowed = originMatcher(corsOrigins);
  // A listed origin's page may read the answer; any other gets no CORS header (same-origin pages need none).
  const allowOrigin = (request: FastifyRequest, reply: FastifyReply) => {
    const origin = request.headers.origin;
    if (typeof origin !== 'string' || !allowed(origin)) return false;
    reply.headers({ 'access-control-allow-origin': origin, vary: 'Origin', 'access-control-expose-headers': 'x-request-id, retry-after' });
    return true;
  };
  return [
    {
      method: 'POST',
      url: SUBSCRIPTION_TOKENS_PATH,
      transport: 'rest',
      operation: 'subscription-token',
      guard,
      async handler(request, reply) {
        const { credential } = request.scope;
        if (!credential) throw new Error('the subscription-token route ran without its guard');
        const { token, expiresAt } = await tokens.mint(credential);
        allowOrigin(request, reply);
        return reply
          .code(201)
          .header('cache-control', 'no-store')
          .send(dataEnvelope({ token, expiresAt: new Date(expiresAt).toISOString() }));
      },
    },
    {
      method: 'OPTIONS',
      url: SUBSCRIPTION_TOKENS_PATH,
      transport: 'rest',
      operation: 'subscription-token',
      handler(request, reply) {
        if (allowOrigin(request, reply)) {
          reply.headers({
            'access-control-allow-methods': 'POST',
            'access-control-allow-headers': 'authorization, content-type, x-request-id',
            'access-control-max-age': '600',
          });
        }
        return reply.code(204).send();
      },
    },
  ];
}
