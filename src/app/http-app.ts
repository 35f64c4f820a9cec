import type { FastifyInstance } from 'fastify';
import type { Config } from '../config/index.js';
import { dashboardRoutes } from '../dashboard/dashboard-routes.js';
import { webhookRoute } from '../events/webhook-route.js';
import { createWebhookVerifier } from '../events/webhook-verifier.js';
import { graphqlRoute, type GraphQLMasking } from '../graphql/graphql-route.js';
import type { GraphQLServer } from '../graphql/graphql-server.js';
import type { GraphiQLPage } from '../graphql/graphiql-page.js';
import { createFrontDoor, registerRoutes, type FrontDoorOptions } from '../http/front-door.js';
import { errorEnvelope } from '../errors.js';
import { UNAUTHENTICATED } from '../observability/metrics.js';
import { metricsRoute, probeRoutes, type ReadinessChecks } from '../observability/operations-routes.js';
import { restRoutes } from '../rest/rest-routes.js';
import type { Composed } from './compose.js';

/*
 * The route table: every path the gateway answers, each a plain handler on
 * the one front door (yoga serves /graphql only). What every route shares
 * (request id, log line, metrics, body limit, guard, masking) is the front
 * door's, not the routes'.
 */

export const GRAPHQL_PATH = '/graphql';
export const WEBHOOK_PATH = '/webhooks';

export interface HttpAppOptions {
  config: Config;
  composed: Composed;
  yoga: GraphQLServer;
  masking: GraphQLMasking;
  /** GraphiQL's page, when yoga serves it (GRAPHIQL, not with TRUSTED_DOCUMENTS=only): its assets are routes here. */
  graphiql: GraphiQLPage | undefined;
  graphqlFastPath: boolean;
  readiness(): ReadinessChecks;
  /** True once the gateway stops accepting connections. */
  closing(): boolean;
  /** False once subscriptions are being ended: a webhook then gets 503. */
  acceptingEvents(): boolean;
}

/** What every listener of the gateway shares: its bounds, its log, how it masks and what it answers off its routes. */
const frontDoorBase = (config: Config, logger: FrontDoorOptions['logger']): Omit<FrontDoorOptions, 'closing' | 'onAnswered'> => ({
  logger,
  maxBodyBytes: config.maxBodyBytes,
  requestTimeoutMs: config.requestTimeoutMs,
  headersTimeoutMs: config.headersTimeoutMs,
  upstreamCallsPerRequest: config.upstreamCallsPerRequest,
  onMasked: (error, request) => request.log.error({ err: error }, 'unexpected error'),
  notFound: (request, reply) => reply.code(404).send(errorEnvelope(`No route for ${request.method} ${request.url.split('?', 1)[0]}`)),
});

export function createHttpApp({ config, composed, yoga, masking, graphiql, graphqlFastPath, readiness, closing, acceptingEvents }: HttpAppOptions): FastifyInstance {
  const { logger, metrics, guard, services } = composed;
  const app = createFrontDoor({
    ...frontDoorBase(config, logger),
    tracing: composed.tracing,
    closing,
    onAnswered(request, status, seconds) {
      const { config: route } = request.routeOptions;
      const transport = route.transport ?? 'rest';
      // Scrapes are not traffic: counting them would make every scrape change what it reads.
      if (transport === 'metrics') return;
      // A request without a valid key chooses no label (issue 17): its series exist from the start.
      const keyless = route.guard !== undefined && request.scope?.credential === undefined;
      const operation = keyless ? UNAUTHENTICATED : transport === 'graphql' ? request.scope?.operation : (route.operation ?? 'other');
      metrics.answered({ transport, operation }, status, request.scope?.graphqlErrors ?? false, seconds);
    },
  });
  registerRoutes(app, [
    graphqlRoute({ yoga, path: GRAPHQL_PATH, masking, fastPath: graphqlFastPath, guard, graphiql: graphiql !== undefined, maxUnsentBytes: config.maxUnsentBytes }),
    ...(graphiql?.routes ?? []),
    ...restRoutes({ backend: services.backend, guard }),
    webhookRoute({
      path: WEBHOOK_PATH,
      maxBodyBytes: config.maxBodyBytes,
      verifier: config.webhookSecrets.length > 0 ? createWebhookVerifier(config.webhookSecrets) : undefined,
      publish: (event, dedupeBy) => services.bus.publish(event, dedupeBy),
      onOutcome(outcome, detail) {
        metrics.webhook(outcome, detail);
        logger.info({ webhook: outcome, detail }, 'webhook');
      },
      accepting: acceptingEvents,
      tracing: composed.tracing,
    }),
    ...dashboardRoutes((error) => logger.error({ err: error }, 'could not read the dashboard')),
    ...probeRoutes({ readiness }),
    // With METRICS_PORT the metrics are only on their own listener (createMetricsApp).
    ...(config.metrics.port === undefined ? [metricsRouteOf(config, composed)] : []),
  ]);
  return app;
}

function metricsRouteOf(config: Config, { metrics }: Composed) {
  return metricsRoute({ renderMetrics: () => metrics.render(), metricsContentType: metrics.contentType, token: config.metrics.token });
}

/**
 * With METRICS_PORT, the listener that serves `GET /metrics` alone, on the
 * same front door (request id, body limit, token guard, masking), so the
 * main port can face clients while scrapes stay on an internal one.
 */
export function createMetricsApp(config: Config, composed: Composed): FastifyInstance | undefined {
  if (config.metrics.port === undefined) return undefined;
  const app = createFrontDoor({ ...frontDoorBase(config, composed.logger), closing: () => false, onAnswered: () => {} });
  registerRoutes(app, [metricsRouteOf(config, composed)]);
  return app;
}
