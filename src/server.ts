import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createYoga, type YogaServerInstance } from 'graphql-yoga';
import { createAuthenticator } from './auth.js';
import type { Backend } from './backends/backend.js';
import { createMemoryBackend } from './backends/memory/memory-backend.js';
import { createRestBackend } from './backends/rest/rest-backend.js';
import type { Config } from './config.js';
import { createContext, type GatewayContext, type GatewayServices } from './context.js';
import { schema } from './graphql/schema.js';
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
}

export interface Gateway {
  /** Starts listening on `config.host:config.port` (port 0 picks a free one). */
  listen(): Promise<{ url: string; port: number }>;
  /** Stops accepting, lets in-flight requests finish, releases the backend. */
  close(): Promise<void>;
  /** In-process entry point: answers a Fetch API request without a socket. */
  fetch: YogaServerInstance<Record<string, unknown>, GatewayContext>['fetch'];
  readonly backend: Backend;
  readonly logger: Logger;
}

export const GRAPHQL_PATH = '/graphql';

function pickBackend(config: Config, logger: Logger): Backend {
  if (!config.upstream) return createMemoryBackend({ productsValues: config.productsValues });
  return createRestBackend({
    ...config.upstream,
    onUpstreamCall(call) {
      recordUpstreamCall(call.durationMs);
      logger.debug({ upstream: call }, 'upstream call');
    },
  });
}

/** The one place that chooses implementations and wires HTTP, routes and GraphQL. */
export function createGateway(config: Config, deps: GatewayDeps = {}): Gateway {
  const logger = deps.logger ?? createLogger(config.logLevel);
  const backend = deps.backend ?? pickBackend(config, logger);
  const services: GatewayServices = {
    backend,
    authenticator: createAuthenticator(config.apiKeys),
    batching: config.batching,
    productsValues: config.productsValues,
  };

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
    context: ({ request }) => createContext(services, request.headers.get('authorization'), requestIdOf(request)),
    plugins: [
      useRequestLog(logger),
      useRestPassthrough({
        backend,
        authenticator: services.authenticator,
        maxBodyBytes: config.maxBodyBytes,
        reservedPaths: [GRAPHQL_PATH, '/healthz'],
        onUnexpectedError: (error) => logger.error({ err: error }, 'unexpected error on a REST route'),
      }),
    ],
  });

  const server: Server = createServer((req, res) => runWithRequestStats(() => yoga(req, res)));

  return {
    fetch: yoga.fetch,
    backend,
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
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
      await backend.close();
    },
  };
}
