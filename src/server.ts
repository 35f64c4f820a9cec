import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createYoga, type YogaServerInstance } from 'graphql-yoga';
import { createAuthenticator } from './auth.js';
import type { Backend } from './backends/backend.js';
import { createMemoryBackend } from './backends/memory/memory-backend.js';
import { startSimulator } from './backends/memory/simulator.js';
import { createRestBackend } from './backends/rest/rest-backend.js';
import type { Config } from './config.js';
import { createContext, requestIdFrom, type GatewayContext, type GatewayServices } from './context.js';
import { createMemoryDedupeStore, type DedupeStore } from './events/dedupe-store.js';
import { createEventBus, type EventBus } from './events/event-bus.js';
import { createEventTransactions } from './events/event-transactions.js';
import { serviceEventFor } from './events/service-events.js';
import { useWebhooks } from './events/use-webhooks.js';
import { createWebhookVerifier } from './events/webhook-verifier.js';
import { schema } from './graphql/schema.js';
import { attachGraphQLWs } from './http/graphql-ws.js';
import { recordUpstreamCall, runWithRequestStats } from './http/request-stats.js';
import { requestIdOf, useRequestLog } from './http/use-request-log.js';
import { createLogger, yogaLogger, type Logger } from './logging.js';
import { useRestPassthrough } from './rest/use-rest-passthrough.js';

/** Parts a test or benchmark may supply instead of the ones `config` would pick. */
export interface GatewayDeps {
  /** @default the backend named by `config.backend` */
  backend?: Backend;
  /** @default a JSON logger at `config.logLevel` */
  logger?: Logger;
  /** @default an in-process bus */
  bus?: EventBus;
  /** @default an in-process store */
  dedupe?: DedupeStore;
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
  const bus = deps.bus ?? createEventBus();
  const backend = deps.backend ?? pickBackend(config, logger);
  // A backend that is the service itself also sends the service's events.
  const stopWatching = backend.watchTransactionChanges?.((transaction) => bus.publish(serviceEventFor(transaction)));
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
    context: (initial: InitialContext) => {
      const authorization = initial.request ? initial.request.headers.get('authorization') : initial.authorization;
      const requestId = initial.request ? requestIdOf(initial.request) : requestIdFrom(undefined);
      return createContext(services, authorization, requestId);
    },
    plugins: [
      useRequestLog(logger),
      useWebhooks({
        path: WEBHOOK_PATH,
        maxBodyBytes: config.maxBodyBytes,
        verifier: config.webhookSecrets.length > 0 ? createWebhookVerifier(config.webhookSecrets) : undefined,
        dedupe: deps.dedupe ?? createMemoryDedupeStore(),
        onEvent(event) {
          bus.publish(event);
          backend.noteTransactionUpdate?.({ ...event.transaction, transactionId: event.transactionId, status: event.status, products: event.products });
        },
        onOutcome: (outcome, detail) => logger.info({ webhook: outcome, detail }, 'webhook'),
      }),
      useRestPassthrough({
        backend,
        authenticator: services.authenticator,
        maxBodyBytes: config.maxBodyBytes,
        reservedPaths: [GRAPHQL_PATH, '/healthz', WEBHOOK_PATH],
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
    listen: () =>
      new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(config.port, config.host, () => {
          server.off('error', reject);
          const { port } = server.address() as AddressInfo;
          const host = config.host.includes(':') ? `[${config.host}]` : config.host;
          resolve({ url: `http://${host}:${port}`, port });
        });
      }),
    async close() {
      stopWatching?.();
      await ws.close();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
      await backend.close();
    },
  };
}
