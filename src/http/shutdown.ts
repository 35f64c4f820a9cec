import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { drain } from './drain.js';

/*
 * How a gateway stops (SIGTERM, SIGINT, or close() in tests):
 *   `shutdown.begin()`: readiness says 503 at once, and the gateway goes on
 *     serving as usual for the grace period, so load balancers move away;
 *   then Fastify's close: every feature's `preClose` (its background work) in
 *     the order of the list; the drain plugin's, last of the list: stop
 *     accepting, wait for requests in flight, end the streams (each feature
 *     that opens streams said how to end them), then the connections; then
 *     the features' `onClose` in the reverse of their order, releasing
 *     connections to Redis, the upstream and the collector.
 * The grace period comes before Fastify's close because Fastify answers
 * everything with `Connection: close` from the moment a close starts.
 */

export interface Shutdown {
  /** Starts a close: readiness 503, then the grace period (resolves when it is over). */
  begin(): Promise<void>;
  /** Set once a close starts: readiness says 503. */
  readonly closing: boolean;
  /** No new connection is accepted: answers say `Connection: close`. */
  readonly refusing: boolean;
  /** Streams are being ended: webhooks get 503, SSE streams end without `complete`. */
  readonly endingStreams: boolean;
  /** Registers how to end the streams a feature opened, given the time left; called once, in order. */
  onEndStreams(end: (remainingMs: number) => Promise<unknown>): void;
}

declare module 'fastify' {
  interface FastifyInstance {
    shutdown: Shutdown;
  }
}

export interface ShutdownOptions {
  /** Longest the shutdown may take once the grace period is over. */
  timeoutMs: number;
  /** How long a stopping gateway goes on serving first (SHUTDOWN_GRACE_MS). */
  graceMs: number;
}

interface ShutdownState extends Shutdown {
  closing: boolean;
  refusing: boolean;
  endingStreams: boolean;
  startedAt: number;
  timeoutMs: number;
  enders: Array<(remainingMs: number) => Promise<unknown>>;
}

const openConnections = (app: FastifyInstance) =>
  new Promise<number>((resolve) => app.server.getConnections((_error, count) => resolve(count ?? 0)));

export const shutdownPlugin = fp<ShutdownOptions>(
  async (app, { timeoutMs, graceMs }) => {
    const state: ShutdownState = {
      closing: false,
      refusing: false,
      endingStreams: false,
      startedAt: 0,
      timeoutMs,
      enders: [],
      async begin() {
        state.closing = true;
        const started = Date.now();
        while (Date.now() - started < graceMs && (await openConnections(app)) > 0) await sleep(20);
        // The deadline counts from the end of the grace period: work in flight then gets the whole of it.
        state.startedAt = Date.now();
      },
      onEndStreams: (end) => void state.enders.push(end),
    };
    app.decorate('shutdown', state as Shutdown);
    app.readiness.add('accepting', () => !state.closing);
    app.addHook('onSend', (_request, reply, _payload, done) => {
      if (state.refusing) reply.header('connection', 'close');
      done();
    });
  },
  { name: 'shutdown' },
);

export const drainPlugin = fp(
  async (app) => {
    const state = app.shutdown as ShutdownState;
    app.addHook('preClose', async () => {
      if (!state.closing) state.startedAt = Date.now();
      state.closing = true;
      const elapsed = Date.now() - state.startedAt;
      await drain({
        server: app.server,
        timeoutMs: Math.max(0, state.timeoutMs - elapsed),
        onStopAccepting: () => (state.refusing = true),
        inFlight: () => {
          let count = 0;
          for (const { scope } of app.inFlight) if (scope && !scope.stream) count += 1;
          return count;
        },
        endStreams: async (remainingMs) => {
          state.endingStreams = true;
          const started = Date.now();
          for (const end of state.enders) await end(Math.max(0, remainingMs - (Date.now() - started)));
        },
      });
    });
  },
  { name: 'drain', dependencies: ['shutdown'] },
);
