import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createYoga, useReadinessCheck, type YogaServerInstance } from 'graphql-yoga';
import { createAuthenticator } from './auth.js';
import type { Backend } from './backends/backend.js';
import { createMemoryBackend } from './backends/memory/memory-backend.js';
import { startSimulator } from './backends/memory/simulator.js';
import { createRestBackend } from './backends/rest/rest-backend.js';
import type { Config } from './config.js';
import { createContext, requestIdFrom, type GatewayContext, type GatewayServices } from './context.js';
import type { EventBus } from './events/event-bus.js';
import { createEventTransactions } from './events/event-transactions.js';
import { createEventTransport, type EventTransport } from './events/event-transport.js';
import { serviceEventFor } from './events/service-events.js';
import { useWebhooks } from './events/use-webhooks.js';
import { createWebhookVerifier } from './events/webhook-verifier.js';
import { schema } from './graphql/schema.js';
import { attachGraphQLWs } from './http/graphql-ws.js';
import { recordUpstreamCall, runWithRequestStats } from './http/request-stats.js';
import { useEventIds } from './http/use-event-ids.js';
import { requestIdOf, useRequestLog } from './http/use-request-log.js';
import { createLogger, yogaLogger, type Logger } from './logging.js';
import { useRestPassthrough } from './rest/use-rest-passthrough.js';

/** Parts a test or benchmark may supply instead of the ones `config` would pick. */
export interface GatewayDeps {
  /** @default the backend named by `config.backend` */
  backend?: Backend;
  /** @default a JSON logger at `config.logLevel` */
  logger?: Logger;
  /** @default in process, or through Redis when `config.redisUrl` is set */
  events?: EventTransport;
}

export interface Gateway {
  /** Starts listening on `config.host:config.port` (port 0 picks a free one). */
  listen(): Promise<{ url: string; port: number }>;
  /** Stops accepting, closes subscriptions, lets in-flight requests finish, releases the backend. */
  close(): Promise<void>;
  /** In-process entry point: answers a Fetch API request without a socket. */
  fetch: YogaServerInstance<Record<string, unknown>, GatewayContext>['fetch'];
  readonly backend: Backend;
  readonly bus: EventBus;
  readonly logger: Logger;
  /** Whether the gateway can take events now (the shared store is reachable). */
  ready(): boolean;
}

export const GRAPHQL_PATH = '/graphql';
export const WEBHOOK_PATH = '/webhooks';

/** Where the initial context of a request or WebSocket operation says the key is. */
interface InitialContext {
  request?: Request;
  authorization?: string;
}

function pickBackend(config: Config, logger: Logger): Backend {
  if (!config.upstream) {
    const memory = createMemoryBackend({ productsValues: config.productsValues });
    if (config.simulatorIntervalMs > 0) startSimulator(memory, config.simulatorIntervalMs);
    return memory;
  }
  return createRestBackend({
    ...config.upstream,
    onUpstreamCall(call) {
      recordUpstreamCall(call.durationMs);
      logger.debug({ upstream: call }, 'upstream call');
    },
  });
}

/** The one place that chooses implementations and wires HTTP, WebSocket, routes and GraphQL. */
export function createGateway(config: Config, deps: GatewayDeps = {}): Gateway {
  const logger = deps.logger ?? createLogger(config.logLevel);
  const events = deps.events ?? createEventTransport({ ...config, logger });
  const { bus } = events;
  const backend = deps.backend ?? pickBackend(config, logger);
  // A backend that is the service itself also sends the service's events.
  const stopWatching = backend.watchTransactionChanges?.((transaction) => {
    bus.publish(serviceEventFor(transaction)).catch((error: unknown) => logger.error({ err: error }, 'could not publish a memory backend event'));
  });
  // Every event, from any instance, refreshes what this one holds of its transaction.
  const stopRefreshing = bus.onEvent((event) =>
    backend.noteTransactionUpdate?.({ ...event.transaction, transactionId: event.transactionId, status: event.status, products: event.products }),
  );
  const services: GatewayServices = {
    backend,
    authenticator: createAuthenticator(config.apiKeys),
    batching: config.batching,
    productsValues: config.productsValues,
    bus,
    eventTransactions: createEventTransactions(backend),
  };
  if (config.webhookSecrets.length === 0) {
    logger.warn('WEBHOOK_SECRET is not set: webhooks are accepted without a signature');
  }

  const yoga = createYoga<Record<string, unknown>, GatewayContext>({
    schema,
    graphqlEndpoint: GRAPHQL_PATH,
    logging: yogaLogger(logger),
    landingPage: false,
    healthCheckEndpoint: '/healthz',
    // Never attach stacks or original messages, whatever NODE_ENV says.
    maskedErrors: { isDev: false },
    graphiql: {
      title: 'vending-gateway',
      // Only the development key is pre-filled, so GraphiQL works at once locally.
      headers: config.devApiKey ? JSON.stringify({ Authorization: config.devApiKey }) : undefined,
    },
    context: ({ request, authorization }: InitialContext) =>
      createContext(
        services,
        request
          ? { authorization: request.headers.get('authorization'), requestId: requestIdOf(request), lastEventId: request.headers.get('last-event-id') }
          : { authorization, requestId: requestIdFrom(undefined) },
      ),
    plugins: [
      useRequestLog(logger),
      useEventIds(),
      // Ready when events can be taken: with Redis, while it is reachable.
      useReadinessCheck({ endpoint: '/readyz', check: () => bus.ready() }),
      useWebhooks({
        path: WEBHOOK_PATH,
        maxBodyBytes: config.maxBodyBytes,
        verifier: config.webhookSecrets.length > 0 ? createWebhookVerifier(config.webhookSecrets) : undefined,
        dedupe: events.dedupe,
        publish: (event) => bus.publish(event),
        onOutcome: (outcome, detail) => logger.info({ webhook: outcome, detail }, 'webhook'),
        onUnexpectedError: (error) => logger.error({ err: error }, 'unexpected error on the webhook route'),
      }),
      useRestPassthrough({
        backend,
        authenticator: services.authenticator,
        maxBodyBytes: config.maxBodyBytes,
        reservedPaths: [GRAPHQL_PATH, '/healthz', '/readyz', WEBHOOK_PATH],
        onUnexpectedError: (error) => logger.error({ err: error }, 'unexpected error on a REST route'),
      }),
    ],
  });

  const server: Server = createServer((req, res) => runWithRequestStats(() => yoga(req, res)));
  const ws = attachGraphQLWs({
    server,
    path: GRAPHQL_PATH,
    yoga,
    authorize(authorization) {
      try {
        services.authenticator.authenticate(authorization);
        return true;
      } catch {
        return false;
      }
    },
    initialContext: (authorization) => ({ authorization }) satisfies InitialContext,
  });

  return {
    fetch: yoga.fetch,
    backend,
    bus,
    logger,
    ready: () => bus.ready(),
    listen: async () => {
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
      stopWatching?.();
      stopRefreshing();
      await ws.close();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
      await events.close();
      await backend.close();
    },
  };
}
