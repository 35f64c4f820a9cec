import fp from 'fastify-plugin';
import { SYSTEM_IDENTITY, type Backend, type CallScope } from '../../backends/backend.js';
import { createCachingBackend } from '../../backends/caching-backend.js';
import { createCoalescingBackend } from '../../backends/coalescing-backend.js';
import { createMemoryBackend } from '../../backends/memory/memory-backend.js';
import { createSimulatorControl, startSimulator } from '../../backends/memory/simulator.js';
import { demoHourOfSales } from '../../backends/memory/demo-hour.js';
import { createDemoData } from '../../backends/memory/demo-data.js';
import { createRestBackend, type UpstreamCall } from '../../backends/rest/rest-backend.js';
import { createDriftReport } from '../../backends/rest/drift-report.js';
import { createGatewayAccountAccess, type AccountAccess } from '../../auth/account-access.js';
import type { Config } from '../../config/config.js';
import { accountOf } from '../../contract/accounts.js';
import { createEventCurrency } from '../../events/event-currency.js';
import { eventTime } from '../../events/event-time.js';
import type { TransactionUpdateEvent } from '../../events/normalize.js';
import { DEFAULT_ACCOUNT } from '../../contract/accounts.js';
import { serviceEventFor } from '../../events/service-events.js';
import { recordingPayments } from '../../history/payment-recording.js';
import type { Logger } from '../../logging/logger.js';
import { DEMO_HOUR_MS, seedsDemoHour, type GatewayDeps } from '../gateway-deps.js';

/*
 * The backend every feature reads through: memory or REST (picked by
 * configuration, or given by a test), wrapped by the fast paths (reads
 * shared while in flight, then the cache), and payment updates recorded in
 * the history. Every event, from any instance, refreshes what it holds.
 */

/** Backends that can say their upstream is cut off (the REST backend's circuit breaker). */
type WithUpstreamState = Backend & { upstreamState?: () => { breaker: string } };

declare module 'fastify' {
  interface FastifyInstance {
    /** The backend as served: fast paths and payment recording around the one picked. */
    backend: Backend;
    /** The backend as picked, without the fast paths (the forward-mode key check asks it). */
    upstream: Backend;
    /** Listens for transactions the entity cache drops (a webhook, a payment update). */
    onTransactionForgotten(listener: (transactionId: string) => void): void;
    /** Runs the memory backend's demo simulator while a dashboard asks (SIMULATOR=auto). */
    demo: (() => () => void) | undefined;
    /**
     * Which account's transactions a credential may receive (src/auth/account-access.ts): in forward mode
     * asked of the service through `upstream`, with a limit of its own so that it never uses up the checks
     * that let a new key in.
     */
    accountAccess: AccountAccess;
    /** The event with the currency of its amounts decided (src/events/event-currency.ts): every publisher calls it first. */
    withCurrency(event: TransactionUpdateEvent): Promise<TransactionUpdateEvent>;
  }
}

/**
 * The log line of an upstream call: what the upstream said of a failure goes
 * here (with the request's id), never to the client; the upstream refusing the
 * gateway's own key is a configuration error, logged as one.
 */
function logUpstreamCall(logger: Logger, call: UpstreamCall, scope: CallScope | undefined, ownKey: boolean): void {
  const line = { requestId: scope?.id, upstream: call };
  if (ownKey && (call.outcome === 401 || call.outcome === 403)) {
    logger.error(line, `the upstream refused UPSTREAM_API_KEY (${call.outcome}): every request fails until the key is fixed`);
  } else if (call.upstreamMessage !== undefined) {
    logger.warn(line, 'upstream answered with an error');
  } else {
    logger.debug(line, 'upstream call');
  }
}

/**
 * How often, while the service refuses UPSTREAM_API_KEY, the gateway asks it again (no client call may come to tell: readiness sends them
 * elsewhere).
 */
const OWN_KEY_RECHECK_MS = 5_000;
/** An id no transaction has: the service's 404 to it says the key is accepted, without reading anything. */
const OWN_KEY_PROBE_ID = 'vending-gateway-key-probe';

/**
 * Whether the service accepts the gateway's own key, as its answers say: a
 * 401 or 403 to any call makes it refused (readiness fails, naming the key),
 * any other answer accepted. While refused, it is asked again every few
 * seconds, so an instance that readiness took out of service comes back once
 * the service takes the key again.
 */
function ownKeyWatch(recheck: () => Promise<unknown>) {
  let refused = false;
  let timer: NodeJS.Timeout | undefined;
  return {
    accepted: () => !refused,
    noteAnswer(status: number) {
      refused = status === 401 || status === 403;
      if (refused && timer === undefined) {
        timer = setInterval(() => void recheck().catch(() => {}), OWN_KEY_RECHECK_MS);
        timer.unref();
      } else if (!refused && timer !== undefined) {
        clearInterval(timer);
        timer = undefined;
      }
    },
    close: () => clearInterval(timer),
  };
}

/** The memory backend, with its demo simulator run as SIMULATOR says. */
function memoryBackend(config: Config): { backend: Backend; demo?: () => () => void; stop?: () => void } {
  const memory = createMemoryBackend({ productsValues: config.productsValues });
  const { mode, intervalMs } = config.simulator;
  const running = mode === 'on' ? startSimulator(memory, intervalMs) : undefined;
  const control = mode === 'auto' ? createSimulatorControl(memory, intervalMs) : undefined;
  return { backend: memory, demo: control && (() => control.acquire()), stop: running };
}

export const backendPlugin = fp<{ config: Config; deps: GatewayDeps }>(
  async (app, { config, deps }) => {
    const logger = app.log as Logger;
    const { metrics } = app;
    const ownKey =
      config.upstream && !config.forwardMode
        ? ownKeyWatch(() => base.getTransaction(OWN_KEY_PROBE_ID, { authorization: '', identity: SYSTEM_IDENTITY }))
        : undefined;
    const picked = deps.backend
      ? { backend: deps.backend }
      : config.upstream
        ? {
            backend: createRestBackend({
              ...config.upstream,
              breaker: {
                ...config.upstream.breaker,
                onStateChange: (state) => logger.warn({ breaker: state }, `upstream circuit ${state}`),
              },
              tracing: app.tracing,
              flatProducts: config.productsValues.flat === '' ? undefined : config.productsValues.flat,
              onContractDrift: createDriftReport({
                count: (drift) => metrics.contractDrift(drift),
                warn: (drift, route) => {
                  const sent = drift.kind === 'missing' ? 'absent' : `as ${drift.sent}`;
                  const answered = drift.kind === 'converted' ? 'converted' : 'GraphQL answers an error on that field';
                  logger.warn(
                    { upstream: { route }, drift },
                    `the service sent ${drift.resource}.${drift.field} ${sent} where the contract shows ${drift.expected}: ${answered}, ` +
                      `REST passes it through (logged once a minute per resource, field and kind)`,
                  );
                },
              }),
              onUpstreamCall(call, scope) {
                // A call the breaker or the queue refused never left the gateway.
                if (call.attempts > 0 && scope) {
                  scope.tally.upstreamCalls += 1;
                  scope.tally.upstreamMs += call.durationMs;
                }
                metrics.upstreamCall(call);
                if (typeof call.outcome === 'number') ownKey?.noteAnswer(call.outcome);
                logUpstreamCall(logger, call, scope, !config.forwardMode);
              },
            }),
          }
        : memoryBackend(config);
    const base: WithUpstreamState = picked.backend;

    const forgotten = new Set<(transactionId: string) => void>();
    const { cacheTtlMs } = config.fastPaths;
    // Reads shared while in flight (outermost, so a cache miss is read once), then the cache.
    const cached =
      cacheTtlMs > 0
        ? createCachingBackend(base, { ttlMs: cacheTtlMs, onForget: (id) => forgotten.forEach((listener) => listener(id)) })
        : base;
    const served = (deps.fastPaths?.coalesce ?? true) ? createCoalescingBackend(cached) : cached;
    const accountAccess = createGatewayAccountAccess(config, base, logger);
    // Which transactions came in on each account's path: a key's account is asked about with one of them.
    const unnote = app.bus.onEvent((event) => accountAccess.note(accountOf(event), event.transactionId));
    // A payment goes to the history the caller reads.
    const backend = app.history
      ? recordingPayments(served, app.history, (credential) => accountAccess.historyAccount(credential), logger)
      : served;

    app.decorate('backend', backend);
    app.decorate('upstream', base as Backend);
    app.decorate('accountAccess', accountAccess);
    app.decorate('onTransactionForgotten', (listener: (transactionId: string) => void) => void forgotten.add(listener));
    app.decorate('demo', 'demo' in picked ? picked.demo : undefined);
    // A vending's currency is read with the gateway's own key, of the account that key reads (the default one); in
    // forward mode the gateway has no key, and another account's vendings are not that key's to read.
    const withCurrency = createEventCurrency({
      defaultCurrency: config.defaultCurrency,
      heldTransaction: base.heldTransaction && ((account, transactionId) => base.heldTransaction?.(transactionId, account)),
      vendingCurrency: config.forwardMode
        ? undefined
        : async (account, vendingId) =>
            account === DEFAULT_ACCOUNT
              ? await served.getVending(vendingId, {}, { authorization: '', identity: SYSTEM_IDENTITY })
              : undefined,
    });
    app.decorate('withCurrency', withCurrency);
    if (base.upstreamState) {
      const state = base.upstreamState;
      app.readiness.add('upstream', () => state().breaker !== 'open');
      metrics.gauge('upstream_circuit_open', '1 while the upstream circuit breaker is open', () => (state().breaker === 'open' ? 1 : 0));
    } else {
      app.readiness.add('upstream', () => true);
    }
    // The service refusing the gateway's own key fails every request: an instance in that state is not ready.
    if (ownKey) app.readiness.add('upstream_key', ownKey.accepted);

    const { bus } = app;
    // A backend that is the service itself also sends the service's events.
    const stopWatching = backend.watchTransactionChanges?.((transaction) => {
      withCurrency(serviceEventFor(transaction))
        .then((event) => bus.publish(event))
        .catch((error: unknown) => logger.error({ err: error }, 'could not publish a memory backend event'));
    });
    // Every event, from any instance, refreshes what this one holds of its transaction.
    const stopRefreshing = bus.onEvent((event) =>
      backend.noteTransactionUpdate?.(
        { ...event.transaction, transactionId: event.transactionId, status: event.status, products: event.products },
        eventTime(event),
        accountOf(event),
      ),
    );
    // The demo's first look: an hour of dated sales in the history it keeps in this process (GatewayDeps.demoHour), after
    // the refresh above listens, so the demo's transactions take the statuses the history shows.
    if (seedsDemoHour(config, deps)) {
      for (const { transaction, at } of demoHourOfSales(createDemoData(), Date.now(), DEMO_HOUR_MS))
        await bus.publish(await withCurrency(serviceEventFor(transaction, at)));
    }
    // The simulator stops before the drain; what a request in flight changes is still published while
    // the drain waits for it, so the watch and the refresh end only once the drain is over.
    app.addHook('preClose', async () => {
      if ('stop' in picked) picked.stop?.();
    });
    app.addHook('onClose', async () => {
      ownKey?.close();
      unnote();
      stopWatching?.();
      stopRefreshing();
      await backend.close();
    });
  },
  { name: 'backend', dependencies: ['metrics', 'events'] },
);
