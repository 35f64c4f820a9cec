import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { Backend } from '../backends/backend.js';
import type { Config } from '../config/config.js';
import type { EventBus } from '../events/event-bus.js';
import { createFrontDoor } from '../http/front-door.js';
import { drainPlugin, shutdownPlugin } from '../http/shutdown.js';
import { createLogger, type Logger } from '../logging/logger.js';
import { createTracing } from '../tracing/tracing.js';
import type { GatewayDeps } from './gateway-deps.js';
import { authPlugin } from './plugins/auth.js';
import { backendPlugin } from './plugins/served-backend.js';
import { eventsPlugin } from './plugins/events.js';
import { graphqlPlugin } from './plugins/graphql.js';
import { mcpPlugin } from './plugins/mcp.js';
import { frontDoorOptions, operationsPlugin, urlHost } from './plugins/operator-endpoints.js';
import { postgresPlugin } from './plugins/postgres.js';
import { redisPlugin } from './plugins/redis.js';
import { dashboardPlugin, restPlugin, webhooksPlugin } from './plugins/routes.js';
import { subscriptionsPlugin } from './plugins/subscriptions.js';
import { vendingsPlugin } from './plugins/vendings.js';
import { metricsPlugin, tracingPlugin } from './plugins/telemetry.js';

/*
 * The composition root. The gateway is the front door (src/http/) with its
 * features registered as Fastify plugins, in one ordered list: each decorates
 * what it offers and closes what it opened, so start-up follows the list and
 * a shutdown runs it backwards (Fastify's plugin loader, avvio).
 */

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
  /** The front door with every feature registered (its decorations are there once `listen()` resolved). */
  readonly app: FastifyInstance;
  readonly backend: Backend;
  readonly bus: EventBus;
  readonly logger: Logger;
  /** Whether the gateway can serve: every readiness check holds. */
  ready(): boolean;
  /** Subscribers connected now, over WebSocket and SSE. */
  activeSubscriptions(): number;
  /** Re-reads API_KEYS_FILE and fetches the JWKS again when next needed (main.ts calls it on SIGHUP). */
  reloadIdentities(): void;
}

/** The features, in the order they start; they stop in the reverse order. */
function registerFeatures(
  app: FastifyInstance,
  config: Config,
  deps: GatewayDeps,
  tracing: ReturnType<typeof createTracing> | undefined,
): void {
  const options = { config, deps };
  app.register(shutdownPlugin, { timeoutMs: config.shutdownTimeoutMs, graceMs: config.shutdownGraceMs });
  app.register(tracingPlugin, { tracing });
  app.register(metricsPlugin);
  app.register(operationsPlugin, options);
  app.register(redisPlugin, options);
  app.register(postgresPlugin, options);
  app.register(eventsPlugin, options);
  app.register(backendPlugin, options);
  app.register(vendingsPlugin, options);
  app.register(authPlugin, options);
  app.register(graphqlPlugin, options);
  app.register(restPlugin);
  app.register(webhooksPlugin, options);
  app.register(dashboardPlugin);
  app.register(mcpPlugin, options);
  app.register(subscriptionsPlugin, options);
  // Last: its preClose runs after every feature stopped its background work.
  app.register(drainPlugin);
}

/** Assembles the gateway; nothing starts or connects until `listen()`. */
export function createGateway(config: Config, deps: GatewayDeps = {}): Gateway {
  const tracing = config.tracing ? createTracing(config.tracing) : undefined;
  const logger = deps.logger ?? createLogger(config.logLevel, { traceIds: tracing !== undefined });
  const app = createFrontDoor({ ...frontDoorOptions(config, logger), tracing });
  registerFeatures(app, config, deps, tracing);
  let closing: Promise<void> | undefined;

  return {
    app,
    get backend() {
      return app.backend;
    },
    get bus() {
      return app.bus;
    },
    logger,
    ready: () => app.readiness.ready(),
    activeSubscriptions: () => app.activeSubscriptions(),
    reloadIdentities: () => app.auth.reloadIdentities(),
    async listen() {
      try {
        await app.listen({ port: config.port, host: config.host });
      } catch (error) {
        // A feature that could not start (a key file it cannot read, a port taken) leaves nothing open.
        await app.close().catch(() => {});
        throw error;
      }
      const { port } = app.server.address() as AddressInfo;
      const metricsUrl = app.metricsUrl();
      return { url: `http://${urlHost(config.host)}:${port}`, port, ...(metricsUrl ? { metricsUrl } : {}) };
    },
    close() {
      // Before `listen()` nothing started: there is no grace period to serve.
      closing ??= (app.hasDecorator('shutdown') ? app.shutdown.begin() : Promise.resolve()).then(() => app.close());
      return closing;
    },
  };
}
