import fp from 'fastify-plugin';
import { isRefusal } from '../../auth/upstream-key-check.js';
import type { Config } from '../../config/config.js';
import { registerRoutes } from '../../http/front-door.js';
import type { Logger } from '../../logging/logger.js';
import { attachGraphQLWs } from '../../subscriptions/graphql-ws.js';
import { subscriptionTokenRoutes } from '../../subscriptions/subscription-token-route.js';
import type { GatewayDeps } from '../gateway-deps.js';
import { GRAPHQL_PATH } from './graphql.js';

/*
 * GraphQL over WebSocket on the front door's server (its `upgrade`), through
 * the same yoga instance. A stopping gateway ends every subscription once it
 * delivered what it holds, without `complete`, so clients come back and resume.
 */

declare module 'fastify' {
  interface FastifyInstance {
    /** Subscribers connected now, over WebSocket and SSE. */
    activeSubscriptions(): number;
  }
}

export const subscriptionsPlugin = fp<{ config: Config; deps: GatewayDeps }>(
  async (app, { config, deps }) => {
    const { bus, vendingBus, auth, graphql, shutdown, metrics } = app;
    // What a browser's EventSource starts an SSE subscription with (it cannot send a key).
    registerRoutes(app, subscriptionTokenRoutes({ tokens: auth.subscriptionTokens, guard: auth.guard, corsOrigins: config.corsOrigins }));
    const ws = attachGraphQLWs({
      server: app.server,
      path: GRAPHQL_PATH,
      logger: app.log as Logger,
      yoga: graphql.yoga,
      limits: config.websocket,
      maxUnsentBytes: config.maxUnsentBytes,
      sharing: deps.fastPaths?.subscriptionSharing ?? true,
      onDemoRequest: app.demo,
      authorize: (authorization) =>
        auth.authenticator.authenticate(authorization).then(
          () => 'accepted' as const,
          (error: unknown) => (isRefusal(error) ? 'refused' : 'retry'),
        ),
      initialContext: (authorization, after) => ({ authorization, after }),
    });
    // SSE subscribers each hold a bus subscription; WebSocket ones share theirs per group.
    const activeSubscriptions = () => {
      const { subscribers, executions } = ws.subscriptions();
      return bus.activeSubscriptions() + vendingBus.activeSubscriptions() - executions + subscribers;
    };
    app.decorate('activeSubscriptions', activeSubscriptions);
    metrics.gauge('active_subscriptions', 'GraphQL subscriptions open on this instance', activeSubscriptions);
    shutdown.onEndStreams(async (remainingMs) => {
      ws.holdEnds();
      // Closing the bus ends every subscription's source, SSE ones too, once they delivered what they hold.
      await Promise.all([bus.close(), vendingBus.close()]);
      await ws.close(remainingMs / 2);
    });
  },
  { name: 'subscriptions', dependencies: ['graphql', 'events', 'auth', 'shutdown', 'metrics'] },
);
