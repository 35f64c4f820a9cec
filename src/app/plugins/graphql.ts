import fp from 'fastify-plugin';
import type { Config } from '../../config/config.js';
import { createEventTransactions } from '../../events/event-transactions.js';
import type { GatewayServices } from '../../graphql/context.js';
import { registerRoutes } from '../../http/front-door.js';
import { MASKED_MESSAGE } from '../../errors.js';
import { graphqlRoute } from '../../graphql/graphql-route.js';
import { createGraphQLServer, type GraphQLServer } from '../../graphql/graphql-server.js';
import { createResponseCache } from '../../graphql/response-cache.js';
import { PERSISTED_QUERY_TTL_MS } from '../../graphql/persisted-queries.js';
import { redisPersistedQueries } from '../../redis/redis-persisted-queries.js';
import { redisKeys } from '../../redis/redis-keys.js';
import { useKeyWatch } from '../../graphql/use-key-watch.js';
import { useTracing } from '../../graphql/use-tracing.js';
import type { Logger } from '../../logging/logger.js';
import { useEventIds } from '../../subscriptions/sse-event-ids.js';
import { useMultipartSubscriptions, useUntakenStreamsEnded } from '../../subscriptions/multipart-subscriptions.js';
import type { GatewayDeps } from '../gateway-deps.js';

/*
 * GraphQL: the services every operation may use, the yoga instance behind
 * /graphql (HTTP and SSE here, WebSocket in the subscriptions plugin), its
 * route and GraphiQL's.
 */

export const GRAPHQL_PATH = '/graphql';

declare module 'fastify' {
  interface FastifyInstance {
    graphql: {
      yoga: GraphQLServer;
      /** What every operation may use. */
      services: GatewayServices;
    };
  }
}

export const graphqlPlugin = fp<{ config: Config; deps: GatewayDeps }>(
  async (app, { config, deps }) => {
    const logger = app.log as Logger;
    const { backend, bus, history, auth, accountAccess, shutdown, metrics } = app;
    const services: GatewayServices = {
      backend,
      authenticator: auth.authenticator,
      rateLimiter: auth.rateLimiter,
      batching: config.batching,
      productsValues: config.productsValues,
      bus,
      eventTransactions: createEventTransactions(backend),
      upstreamCallsPerRequest: config.upstreamCallsPerRequest,
      history,
      accountAccess,
      defaultCurrency: config.defaultCurrency,
      vendingBus: app.vendingBus,
      vendingStates: app.vendingStates,
    };
    const { cacheTtlMs } = config.fastPaths;
    const responseCache =
      cacheTtlMs > 0 && (deps.fastPaths?.responseCache ?? true) ? createResponseCache({ ttlMs: cacheTtlMs }) : undefined;
    // Whatever drops a transaction from the entity cache drops the results that hold it.
    if (responseCache) app.onTransactionForgotten(responseCache.forgetTransaction);
    const compiledExecution = deps.fastPaths?.compiledExecution ?? true;
    const tracing = app.tracing && useTracing(app.tracing);
    await tracing?.loaded;
    const { yoga, graphiql } = createGraphQLServer({
      path: GRAPHQL_PATH,
      services,
      logger,
      limits: config.limits,
      masking: { isDev: false, errorMessage: MASKED_MESSAGE },
      graphiql: config.graphiql,
      devApiKey: config.devApiKey,
      corsOrigins: config.corsOrigins,
      compiledExecution,
      responseCache: responseCache?.plugin,
      // Shared by the instances where there is Redis; else each keeps its own, bounded.
      persistedQueries:
        app.redis &&
        redisPersistedQueries(app.redis.commands, redisKeys(config.redisPrefix), {
          ttlMs: PERSISTED_QUERY_TTL_MS,
          maxBytes: config.maxBodyBytes,
        }),
      tracing: tracing?.plugins,
      metrics: metrics.plugin(),
      plugins: [
        useEventIds({ stopping: () => shutdown.endingStreams }),
        useMultipartSubscriptions(),
        ...(auth.authenticator.watch ? [useKeyWatch(auth.authenticator.watch)] : []),
      ] as never,
      lastPlugins: [useUntakenStreamsEnded()] as never,
    });
    app.decorate('graphql', { yoga, services });
    registerRoutes(app, [
      graphqlRoute({
        yoga,
        path: GRAPHQL_PATH,
        guard: (request) => auth.streamGuard(request),
        graphiql: graphiql !== undefined,
        maxUnsentBytes: config.maxUnsentBytes,
      }),
      ...(graphiql?.routes ?? []),
    ]);
  },
  { name: 'graphql', dependencies: ['auth', 'backend', 'events', 'vendings', 'metrics', 'shutdown'] },
);
