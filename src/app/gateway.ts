import type { AddressInfo } from 'node:net';
import { isRefusal } from '../auth/upstream-key-check.js';
import type { Backend } from '../backends/backend.js';
import type { Config } from '../config/index.js';
import type { EventBus } from '../events/event-bus.js';
import { MASKED_MESSAGE } from '../http/masked-answer.js';
import { createGraphQLServer } from '../graphql/graphql-server.js';
import { useKeyWatch } from '../graphql/use-key-watch.js';
import { useTracing } from '../graphql/use-tracing.js';
import { attachGraphQLWs } from '../subscriptions/graphql-ws.js';
import { useEventIds } from '../subscriptions/sse-event-ids.js';
import type { Logger } from '../logging/logger.js';
import { compose, type GatewayDeps } from './compose.js';
import { createHttpApp, createMetricsApp, GRAPHQL_PATH } from './http-app.js';
import { stopGateway } from './lifecycle.js';
import { isReady, type ReadinessChecks } from '../observability/operations-routes.js';

export type { GatewayDeps };

export interface Gateway {
  /** Starts listening on `config.host:config.port` (port 0 picks a free one), and the metrics' own port when set. */
  listen(): Promise<{ url: string; port: number; metricsUrl?: string }>;
  /**
   * Graceful shutdown: stops accepting, lets in-flight requests finish (each
   * answered with `Connection: close`), ends subscriptions once they delivered
   * what they hold, in a way clients retry (no `complete`; WebSocket close
   * 1012), and closes what is left after `config.shutdownTimeoutMs`.
   */
  close(): Promise<void>;
  readonly backend: Backend;
  readonly bus: EventBus;
  readonly logger: Logger;
  /** Whether the gateway can serve: not shutting down, events storable, upstream not cut off. */
  ready(): boolean;
  /** Subscribers connected now, over WebSocket and SSE. */
  activeSubscriptions(): number;
  /** Re-reads API_KEYS_FILE and fetches the JWKS again when next needed (main.ts calls it on SIGHUP). */
  reloadIdentities(): void;
}

/** Assembles the gateway: implementations (compose.ts), routes on the front door (http-app.ts), WebSocket, and its lifecycle. */
export function createGateway(config: Config, deps: GatewayDeps = {}): Gateway {
  // SSE subscribers each hold a bus subscription; WebSocket ones share theirs per group.
  const activeSubscriptions = () => {
    const { subscribers, executions } = ws.subscriptions();
    return composed.services.bus.activeSubscriptions() - executions + subscribers;
  };
  const composed = compose(config, deps, () => activeSubscriptions(), () => readiness());
  const { logger, services, metrics, events } = composed;
  const state = { closing: false, refusing: false, endingStreams: false };
  const readiness = (): ReadinessChecks => ({
    accepting: !state.closing,
    events: services.bus.ready(),
    upstream: composed.base.upstreamState?.().breaker !== 'open',
  });
  const ready = () => isReady(readiness());
  const graphqlTracing = composed.tracing && useTracing(composed.tracing);
  const masking = { isDev: false, errorMessage: MASKED_MESSAGE, onMasked: (error: unknown) => logger.error({ err: error }, 'unexpected error') };
  const { yoga, trusted, graphiql } = createGraphQLServer({
    path: GRAPHQL_PATH,
    services,
    logger,
    limits: config.limits,
    masking,
    graphiql: config.graphiql,
    devApiKey: config.devApiKey,
    corsOrigins: config.corsOrigins,
    compiledExecution: deps.fastPaths?.compiledExecution ?? true,
    responseCache: composed.responseCache?.plugin,
    tracing: graphqlTracing?.plugins,
    metrics: metrics.plugin(),
    plugins: [
      useEventIds({ stopping: () => state.endingStreams }),
      ...(services.authenticator.watch ? [useKeyWatch(services.authenticator.watch)] : []),
    ] as never,
  });
  const app = createHttpApp({
    config,
    composed,
    yoga,
    masking,
    graphiql,
    graphqlFastPath: deps.fastPaths?.graphqlFastPath ?? true,
    readiness,
    closing: () => state.refusing,
    acceptingEvents: () => !state.endingStreams,
  });
  const metricsApp = createMetricsApp(config, composed);
  const ws = attachGraphQLWs({
    server: app.server,
    path: GRAPHQL_PATH,
    yoga,
    limits: config.websocket,
    maxUnsentBytes: config.maxUnsentBytes,
    sharing: deps.fastPaths?.subscriptionSharing ?? true,
    onDemoRequest: composed.demo,
    trusted,
    authorize: (authorization) =>
      services.authenticator.authenticate(authorization).then(
        () => 'accepted' as const,
        (error: unknown) => (isRefusal(error) ? 'refused' : 'retry'),
      ),
    initialContext: (authorization) => ({ authorization }),
  });
  // Subscription streams are ended by the shutdown itself; every other request is waited for.
  let inFlight = 0;
  app.server.on('request', (req, res) => {
    if ((req.headers.accept ?? '').includes('text/event-stream')) return;
    inFlight += 1;
    res.once('close', () => (inFlight -= 1));
  });

  return {
    backend: composed.backend,
    bus: services.bus,
    logger,
    ready,
    activeSubscriptions,
    reloadIdentities: () => composed.reloadIdentities(),
    async listen() {
      // Loaded only now, and only with tracing on; spans start with the first request.
      await composed.tracing?.start(logger);
      await graphqlTracing?.loaded;
      if (!(await events.connect(5_000))) logger.warn('Redis is not reachable yet: not ready until it is');
      await app.listen({ port: config.port, host: config.host });
      const { port } = app.server.address() as AddressInfo;
      const host = config.host.includes(':') ? `[${config.host}]` : config.host;
      if (!metricsApp) return { url: `http://${host}:${port}`, port };
      await metricsApp.listen({ port: config.metrics.port, host: config.host });
      const metricsPort = (metricsApp.server.address() as AddressInfo).port;
      return { url: `http://${host}:${port}`, port, metricsUrl: `http://${host}:${metricsPort}/metrics` };
    },
    async close() {
      if (state.closing) return;
      state.closing = true;
      await stopGateway({ config, composed, app, metricsApp, ws, state, inFlight: () => inFlight });
    },
  };
}
