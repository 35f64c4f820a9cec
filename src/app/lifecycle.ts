import type { FastifyInstance } from 'fastify';
import type { Config } from '../config/index.js';
import { drain } from '../http/drain.js';
import type { GraphQLWsServer } from '../subscriptions/graphql-ws.js';
import type { Composed } from './compose.js';

/*
 * How a gateway stops (SIGTERM, SIGINT, or close() in tests), in order:
 * background work stops; drain.ts serves the grace period, stops accepting,
 * waits for requests in flight and ends subscriptions so that their clients
 * come back and resume (no `complete`; WebSocket close 1012); then the front
 * door and every connection are released.
 */

export interface StopState {
  /** Answers carry Connection: close from now on. */
  refusing: boolean;
  /** Subscriptions are being ended: webhooks get 503, SSE streams end without `complete`. */
  endingStreams: boolean;
}

export interface StopOptions {
  config: Config;
  composed: Composed;
  app: FastifyInstance;
  /** The metrics' own listener (METRICS_PORT): scraped until the end, closed last. */
  metricsApp: FastifyInstance | undefined;
  ws: GraphQLWsServer;
  state: StopState;
  inFlight(): number;
}

export async function stopGateway({ config, composed, app, metricsApp, ws, state, inFlight }: StopOptions): Promise<void> {
  composed.stop();
  await drain({
    server: app.server,
    timeoutMs: config.shutdownTimeoutMs,
    graceMs: config.shutdownGraceMs,
    onStopAccepting: () => (state.refusing = true),
    inFlight,
    // Subscriptions deliver what they hold, then end without `complete`, so clients come back and resume.
    endStreams: async (remainingMs) => {
      state.endingStreams = true;
      ws.holdEnds();
      await composed.services.bus.close();
      await ws.close(remainingMs / 2);
    },
  });
  await app.close();
  await metricsApp?.close();
  await composed.release();
}
