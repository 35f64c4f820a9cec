import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { useCSRFPrevention } from '@graphql-yoga/plugin-csrf-prevention';
import { createYoga, useReadinessCheck, type Plugin, type YogaServerInstance } from 'graphql-yoga';
import { createAuthenticator } from './auth.js';
import type { Backend, Credential } from './backends/backend.js';
import { createCachingBackend } from './backends/caching-backend.js';
import { createCoalescingBackend } from './backends/coalescing-backend.js';
import { createMemoryBackend } from './backends/memory/memory-backend.js';
import { createSimulatorControl, startSimulator } from './backends/memory/simulator.js';
import { createRestBackend, type UpstreamCall } from './backends/rest/rest-backend.js';
import type { Config } from './config/index.js';
import { createContext, requestIdFrom, type GatewayContext, type GatewayServices } from './context.js';
import type { EventBus } from './events/event-bus.js';
import { createEventTransactions } from './events/event-transactions.js';
import { createEventTransport, type EventTransport } from './events/event-transport.js';
import { serviceEventFor } from './events/service-events.js';
import { useWebhooks } from './events/use-webhooks.js';
import { createWebhookVerifier } from './events/webhook-verifier.js';
import { schema } from './graphql/schema.js';
import { loadTrustedDocuments, useTrustedDocuments } from './graphql/trusted-documents.js';
import { useKeyWatch } from './graphql/use-key-watch.js';
import { queryLimitPlugins } from './graphql/use-query-limits.js';
import { useBodyLimit } from './http/use-body-limit.js';
import { useDashboard } from './http/use-dashboard.js';
import { drain } from './http/drain.js';
import { createRequestRouter } from './http/request-router.js';
import { attachGraphQLWs } from './http/graphql-ws.js';
import { createRateLimiter } from './http/rate-limit.js';
import { useEventIds } from './http/use-event-ids.js';
import { requestIdOf, upstreamTallyOf, useRequestLog } from './http/use-request-log.js';
import { createLogger, yogaLogger, type Logger } from './logging.js';
import { createMetrics } from './observability/metrics.js';
import { createRedisClients, type RedisClients } from './redis/redis-clients.js';
import { createRestResponder, useRestPassthrough } from './rest/use-rest-passthrough.js';
import { createForwardKeyCheck, isRefusal } from './upstream-key-check.js';

/** Parts a test or benchmark may supply instead of the ones `config` would pick. */
export interface GatewayDeps {
  /** @default the backend named by `config.backend` */
  backend?: Backend;
  /** @default a JSON logger at `config.logLevel` */
  logger?: Logger;
  /** Fast paths only a benchmark switches off, to show what each is worth (bench/lib/gateway-main.ts). */
  fastPaths?: {
    /** Concurrent identical reads under the same key share one backend call. @default true */
    coalesce?: boolean;
    /** WebSocket subscribers with the same document, variables and key share one execution per event. @default true */
    subscriptionSharing?: boolean;
  };
}

export interface Gateway {
  /** Starts listening on `config.host:config.port` (port 0 picks a free one). */
  listen(): Promise<{ url: string; port: number }>;
  /**
   * Graceful shutdown: stops accepting, lets in-flight requests finish (each
   * answered with `Connection: close`), ends subscriptions once they delivered
   * what they hold, in a way clients retry (no `complete`; WebSocket close
   * 1012), and closes what is left after `config.shutdownTimeoutMs`.
   */
  close(): Promise<void>;
  /** In-process entry point: answers a Fetch API request without a socket. */
  fetch: YogaServerInstance<Record<string, unknown>, GatewayContext>['fetch'];
  readonly backend: Backend;
  readonly bus: EventBus;
  readonly logger: Logger;
  /** Whether the gateway can serve: not shutting down, events storable, upstream not cut off. */
  ready(): boolean;
  /** Subscribers connected now, over WebSocket and SSE. */
  activeSubscriptions(): number;
}

export const GRAPHQL_PATH = '/graphql';
export const WEBHOOK_PATH = '/webhooks';
const OPERATIONS_PATHS = ['/healthz', '/readyz', '/metrics'];

/** Where the initial context of a request or WebSocket operation says the key is. */
interface InitialContext {
  request?: Request;
  authorization?: string;
}

/** Backends that can say their upstream is cut off (the REST backend's circuit breaker). */
type WithUpstreamState = Backend & { upstreamState?: () => { breaker: string } };

/** The backend, and for the memory one a way to run its demo simulator while a dashboard asks. */
function pickBackend(config: Config, logger: Logger, onUpstreamCall: (call: UpstreamCall, credential: Credential) => void): { backend: Backend; demo?: () => () => void } {
  if (!config.upstream) {
    const memory = createMemoryBackend({ productsValues: config.productsValues });
    const { mode, intervalMs } = config.simulator;
    if (mode === 'on') startSimulator(memory, intervalMs);
    const control = mode === 'auto' ? createSimulatorControl(memory, intervalMs) : undefined;
    return { backend: memory, demo: control && (() => control.acquire()) };
  }
  const backend = createRestBackend({
    ...config.upstream,
    breaker: { ...config.upstream.breaker, onStateChange: (state) => logger.warn({ breaker: state }, `upstream circuit ${state}`) },
    onUpstreamCall,
  });
  return { backend };
}

/** Reads shared while in flight (outermost, so a cache miss is read once), then the cache. */
function withFastPaths(backend: Backend, cacheTtlMs: number, coalesce: boolean): Backend {
  const cached = cacheTtlMs > 0 ? createCachingBackend(backend, { ttlMs: cacheTtlMs }) : backend;
  return coalesce ? createCoalescingBackend(cached) : cached;
}

/** The one place that chooses implementations and wires HTTP, WebSocket, routes and GraphQL. */
export function createGateway(config: Config, deps: GatewayDeps = {}): Gateway {
  const logger = deps.logger ?? createLogger(config.logLevel);
  const redis: RedisClients | undefined = config.redisUrl ? createRedisClients(config.redisUrl) : undefined;
  const events: EventTransport = createEventTransport({ ...config, redis, logger });
  const { bus } = events;
  const picked = deps.backend
    ? { backend: deps.backend, demo: undefined }
    : pickBackend(config, logger, (call, { tally }) => {
      // A call the breaker or the queue refused never left the gateway.
      if (call.attempts > 0 && tally) {
        tally.upstreamCalls += 1;
        tally.upstreamMs += call.durationMs;
      }
      metrics.upstreamCall(call);
      logger.debug({ upstream: call }, 'upstream call');
    });
  const base: WithUpstreamState = picked.backend;
  const backend = withFastPaths(base, config.fastPaths.cacheTtlMs, deps.fastPaths?.coalesce ?? true);
  // SSE subscribers each hold a bus subscription; WebSocket ones share theirs per group.
  const activeSubscriptions = () => {
    const { subscribers, executions } = ws.subscriptions();
    return bus.activeSubscriptions() - executions + subscribers;
  };
  const metrics = createMetrics({ activeSubscriptions: () => activeSubscriptions(), circuitState: () => base.upstreamState?.().breaker });
  const keyCheck = createForwardKeyCheck(config, base);
  const rateLimiter = createRateLimiter({ perSecond: config.rateLimitPerSecond, redis: redis?.commands, prefix: config.redisPrefix });
  const services: GatewayServices = {
    backend,
    authenticator: createAuthenticator(config.apiKeys, keyCheck?.check),
    rateLimiter,
    batching: config.batching,
    productsValues: config.productsValues,
    bus,
    eventTransactions: createEventTransactions(backend),
  };
  const trusted = config.limits.trustedDocuments === 'only' ? loadTrustedDocuments() : undefined;
  if (config.webhookSecrets.length === 0) logger.warn('WEBHOOK_SECRET is not set: webhooks are accepted without a signature');

  // A backend that is the service itself also sends the service's events.
  const stopWatching = backend.watchTransactionChanges?.((transaction) => {
    bus.publish(serviceEventFor(transaction)).catch((error: unknown) => logger.error({ err: error }, 'could not publish a memory backend event'));
  });
  // Every event, from any instance, refreshes what this one holds of its transaction.
  const stopRefreshing = bus.onEvent((event) =>
    backend.noteTransactionUpdate?.({ ...event.transaction, transactionId: event.transactionId, status: event.status, products: event.products }),
  );

  let closing = false;
  let refusing = false;
  let endingStreams = false;
  const ready = () => !closing && bus.ready() && base.upstreamState?.().breaker !== 'open';

  const restOptions = {
    backend,
    authenticator: services.authenticator,
    admit: (credential: Credential) => rateLimiter.admit(credential),
    maxBodyBytes: config.maxBodyBytes,
    reservedPaths: [GRAPHQL_PATH, WEBHOOK_PATH, ...OPERATIONS_PATHS],
    onUnexpectedError: (error: unknown) => logger.error({ err: error }, 'unexpected error on a REST route'),
  };
  const restResponder = createRestResponder(restOptions);
  const requestLog = useRequestLog(logger, () => refusing);
  const metricsPlugin = metrics.plugin();
  const plugins: Plugin[] = [
    requestLog,
    metricsPlugin,
    useBodyLimit(config.maxBodyBytes, GRAPHQL_PATH),
    useEventIds({ stopping: () => endingStreams }) as Plugin,
    useDashboard((error) => logger.error({ err: error }, 'could not build the dashboard')),
    useReadinessCheck({ endpoint: '/readyz', check: ready }),
    useWebhooks({
      path: WEBHOOK_PATH,
      maxBodyBytes: config.maxBodyBytes,
      verifier: config.webhookSecrets.length > 0 ? createWebhookVerifier(config.webhookSecrets) : undefined,
      publish: (event, dedupeBy) => bus.publish(event, dedupeBy),
      onOutcome(outcome, detail) {
        metrics.webhook(outcome, detail);
        logger.info({ webhook: outcome, detail }, 'webhook');
      },
      onUnexpectedError: (error) => logger.error({ err: error }, 'unexpected error on the webhook route'),
      accepting: () => !endingStreams,
    }),
    useRestPassthrough(restOptions, restResponder),
    // Authorization is required anyway; a request carrying it is never a "simple" cross-site one.
    useCSRFPrevention({ requestHeaders: ['authorization', 'x-graphql-yoga-csrf'] }),
    ...queryLimitPlugins(config.limits),
    ...(trusted ? [useTrustedDocuments(trusted)] : []),
    ...(keyCheck ? [useKeyWatch(keyCheck) as Plugin] : []),
  ];

  const masking = { isDev: false, errorMessage: 'Unexpected error.', onMasked: (error: unknown) => logger.error({ err: error }, 'unexpected error') };
  const yoga = createYoga<Record<string, unknown>, GatewayContext>({
    schema,
    graphqlEndpoint: GRAPHQL_PATH,
    logging: yogaLogger(logger),
    landingPage: false,
    healthCheckEndpoint: '/healthz',
    batching: false,
    // useBodyLimit bounds every body, and more cheaply (see there).
    maxRequestBodySize: false,
    // Never attach stacks or original messages, whatever NODE_ENV says.
    maskedErrors: { isDev: masking.isDev, errorMessage: masking.errorMessage },
    graphiql: trusted
      ? false
      : {
          title: 'vending-gateway',
          // Only the development key is pre-filled, so GraphiQL works at once locally.
          headers: config.devApiKey ? JSON.stringify({ Authorization: config.devApiKey }) : undefined,
        },
    context: ({ request, authorization }: InitialContext) =>
      createContext(
        services,
        request
          ? {
              authorization: request.headers.get('authorization'),
              requestId: requestIdOf(request),
              lastEventId: request.headers.get('last-event-id'),
              tally: upstreamTallyOf(request),
            }
          : { authorization, requestId: requestIdFrom(undefined) },
      ),
    plugins,
  });

  const routeRequest = createRequestRouter({
    yoga,
    laneHooks: [requestLog, metricsPlugin],
    graphqlPath: GRAPHQL_PATH,
    masking,
    rest: restResponder,
    enabled: config.fastPaths.directLane,
  });
  let inFlight = 0;
  const server: Server = createServer({ requestTimeout: config.requestTimeoutMs, headersTimeout: Math.min(config.requestTimeoutMs, 60_000) }, (req, res) => {
    // Subscription streams are ended by the shutdown itself; every other request is waited for.
    if (!(req.headers.accept ?? '').includes('text/event-stream')) {
      inFlight += 1;
      res.once('close', () => (inFlight -= 1));
    }
    return routeRequest(req, res);
  });
  const ws = attachGraphQLWs({
    server,
    path: GRAPHQL_PATH,
    yoga,
    limits: config.websocket,
    sharing: deps.fastPaths?.subscriptionSharing ?? true,
    onDemoRequest: picked.demo,
    trusted,
    authorize: (authorization) =>
      services.authenticator.authenticate(authorization).then(
        () => 'accepted' as const,
        (error: unknown) => (isRefusal(error) ? 'refused' : 'retry'),
      ),
    initialContext: (authorization) => ({ authorization }) satisfies InitialContext,
  });

  return {
    fetch: yoga.fetch,
    backend,
    bus,
    logger,
    ready,
    activeSubscriptions,
    async listen() {
      if (!(await events.connect(5_000))) logger.warn('Redis is not reachable yet: not ready until it is');
      return new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(config.port, config.host, () => {
          server.off('error', reject);
          const { port } = server.address() as AddressInfo;
          const host = config.host.includes(':') ? `[${config.host}]` : config.host;
          resolve({ url: `http://${host}:${port}`, port });
        });
      });
    },
    async close() {
      if (closing) return;
      closing = true;
      stopWatching?.();
      stopRefreshing();
      keyCheck?.close();
      await drain({
        server,
        timeoutMs: config.shutdownTimeoutMs,
        graceMs: config.shutdownGraceMs,
        onStopAccepting: () => (refusing = true),
        inFlight: () => inFlight,
        // Subscriptions deliver what they hold, then end without `complete`, so clients come back and resume.
        endStreams: async (remainingMs) => {
          endingStreams = true;
          ws.holdEnds();
          await bus.close();
          await ws.close(remainingMs / 2);
        },
      });
      await events.close();
      await redis?.close();
      await backend.close();
    },
  };
}
