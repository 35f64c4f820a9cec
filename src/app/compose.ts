import { createAuthenticator, requestGuard } from '../auth/authenticator.js';
import { createJwtVerifier, type JwtVerifier } from '../auth/jwt-verifier.js';
import { createKeyStore, type KeyStore } from '../auth/key-store.js';
import type { Backend, CallScope } from '../backends/backend.js';
import { createCachingBackend } from '../backends/caching-backend.js';
import { createCoalescingBackend } from '../backends/coalescing-backend.js';
import { createMemoryBackend } from '../backends/memory/memory-backend.js';
import { createSimulatorControl, startSimulator } from '../backends/memory/simulator.js';
import { createRestBackend, type UpstreamCall } from '../backends/rest/rest-backend.js';
import { ConfigError, type Config } from '../config/index.js';
import type { GatewayServices } from '../graphql/context.js';
import { createEventTransactions } from '../events/event-transactions.js';
import { createMemoryEventTransport, type EventTransport } from '../events/event-transport.js';
import { serviceEventFor } from '../events/service-events.js';
import type { TransactionUpdateEvent } from '../events/normalize.js';
import { eventTime } from '../events/event-time.js';
import { createRateLimiter } from '../http/rate-limit.js';
import { createLogger, type Logger } from '../logging/logger.js';
import { createMetrics, type GatewayMetrics } from '../observability/metrics.js';
import type { ReadinessChecks } from '../observability/operations-routes.js';
import { createRedisClients, type RedisClients } from '../redis/redis-clients.js';
import { createRedisEventTransport } from '../redis/redis-event-transport.js';
import { createRedisHistory } from '../redis/redis-history.js';
import { createForwardKeyCheck, type UpstreamKeyCheck } from '../auth/upstream-key-check.js';
import { createResponseCache, type ResponseCache } from '../graphql/response-cache.js';
import { createTracing, type Tracing } from '../tracing/tracing.js';
import { createMemoryHistory } from '../history/memory-history.js';
import { recordingPayments } from '../history/payment-recording.js';
import type { HistoryStore } from '../history/history-store.js';

/*
 * Chooses the implementations (DESIGN §6 "a composition root that picks
 * implementations"): memory or REST backend with its fast paths, events in
 * process or through Redis, the forward-mode key check, metrics. Nothing here
 * speaks HTTP; http-app.ts puts routes on the front door, lifecycle.ts starts
 * and stops it all.
 */

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
    /** Plain GraphQL queries run through yoga's engine without its Fetch adapter (graphql-route.ts). @default true */
    graphqlFastPath?: boolean;
    /** Queries and mutations run compiled by graphql-jit (use-compiled-execution.ts). @default true */
    compiledExecution?: boolean;
    /** With CACHE_TTL_MS, whole GraphQL results are kept too (graphql/response-cache.ts). @default true */
    responseCache?: boolean;
  };
}

/** Backends that can say their upstream is cut off (the REST backend's circuit breaker). */
type WithUpstreamState = Backend & { upstreamState?: () => { breaker: string } };

export interface Composed {
  logger: Logger;
  /** Set when an OTLP endpoint is: started before the gateway listens, shut down (spans flushed) last. */
  tracing: Tracing | undefined;
  events: EventTransport;
  /** The backend as picked (its breaker state), and as served (with the fast paths). */
  base: WithUpstreamState;
  backend: Backend;
  metrics: GatewayMetrics;
  services: GatewayServices;
  /** Whole GraphQL results kept for CACHE_TTL_MS, dropped with the entity cache's entries; none when the cache is off. */
  responseCache: ResponseCache | undefined;
  keyCheck: UpstreamKeyCheck | undefined;
  /** The front door's guard for routes that need a key. */
  guard: ReturnType<typeof requestGuard>;
  /** Re-reads API_KEYS_FILE and forgets the fetched JWKS (SIGHUP). */
  reloadIdentities(): void;
  /** Runs the memory backend's demo simulator while a dashboard asks (SIMULATOR=auto). */
  demo: (() => () => void) | undefined;
  /** Stops what runs in the background (first thing on shutdown). */
  stop(): void;
  /** Releases connections (last thing on shutdown). */
  release(): Promise<void>;
}

/** The backend, and for the memory one a way to run its demo simulator while a dashboard asks. */
function pickBackend(config: Config, logger: Logger, tracing: Tracing | undefined, onUpstreamCall: (call: UpstreamCall, scope: CallScope | undefined) => void): { backend: Backend; demo?: () => () => void } {
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
    tracing,
  });
  return { backend };
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

/** Reads shared while in flight (outermost, so a cache miss is read once), then the cache. */
function withFastPaths(backend: Backend, cacheTtlMs: number, coalesce: boolean, responseCache: ResponseCache | undefined): Backend {
  const cached = cacheTtlMs > 0 ? createCachingBackend(backend, { ttlMs: cacheTtlMs, onForget: responseCache?.forgetTransaction }) : backend;
  return coalesce ? createCoalescingBackend(cached) : cached;
}

/** The gateway's keys; a key file it cannot use stops it from starting, in one line naming the variable. */
function keyStoreOf(config: Config, logger: Logger): KeyStore {
  try {
    return createKeyStore({ entries: config.apiKeys, file: config.apiKeysFile, logger });
  } catch (error) {
    throw new ConfigError('API_KEYS_FILE', `a readable file of key entries (${(error as Error).message})`, undefined);
  }
}

/** An event the history cannot take is logged; it never stops the webhook that brought it. */
function feedHistory(apply: (event: TransactionUpdateEvent) => void, logger: Logger) {
  return (event: TransactionUpdateEvent) => {
    try {
      apply(event);
    } catch (error) {
      logger.error({ err: error, eventId: event.eventId }, 'an event could not be applied to the history');
    }
  };
}

export function compose(config: Config, deps: GatewayDeps, activeSubscriptions: () => number, readiness?: () => ReadinessChecks): Composed {
  const tracing = config.tracing ? createTracing(config.tracing) : undefined;
  const logger = deps.logger ?? createLogger(config.logLevel, { traceIds: tracing !== undefined });
  // Before any connection opens, so that a key file it cannot use leaves nothing open.
  const { forwardMode } = config;
  const keys = forwardMode ? undefined : keyStoreOf(config, logger);
  const redis: RedisClients | undefined = config.redisUrl ? createRedisClients(config.redisUrl, { commandTimeoutMs: config.redisCommandTimeoutMs, logger }) : undefined;
  // The history is fed where the event log admits an event (once, whichever instance received it).
  const redisHistory = redis && config.history ? createRedisHistory(redis.commands, { ...config.history, prefix: config.redisPrefix }) : undefined;
  const history: HistoryStore | undefined = redisHistory ?? (config.history && createMemoryHistory(config.history));
  const events = redis
    ? createRedisEventTransport(redis, { ...config, logger, afterAppend: redisHistory?.appendStep })
    : createMemoryEventTransport(config.eventLogSize, config.eventLogMaxBytes, history?.apply && feedHistory(history.apply, logger));
  const { bus } = events;
  const picked = deps.backend
    ? { backend: deps.backend, demo: undefined }
    : pickBackend(config, logger, tracing, (call, scope) => {
        // A call the breaker or the queue refused never left the gateway.
        if (call.attempts > 0 && scope) {
          scope.tally.upstreamCalls += 1;
          scope.tally.upstreamMs += call.durationMs;
        }
        metrics.upstreamCall(call);
        logUpstreamCall(logger, call, scope, !config.forwardMode);
      });
  const base: WithUpstreamState = picked.backend;
  const { cacheTtlMs } = config.fastPaths;
  const responseCache = cacheTtlMs > 0 && (deps.fastPaths?.responseCache ?? true) ? createResponseCache({ ttlMs: cacheTtlMs }) : undefined;
  const served = withFastPaths(base, cacheTtlMs, deps.fastPaths?.coalesce ?? true, responseCache);
  const backend = history ? recordingPayments(served, history, logger) : served;
  const metrics = createMetrics({ activeSubscriptions, circuitState: () => base.upstreamState?.().breaker, readiness });
  const keyCheck = createForwardKeyCheck(config, base);
  const rateLimiter = createRateLimiter({ perSecond: config.rateLimitPerSecond, redis: redis?.commands, prefix: config.redisPrefix, logger });
  const jwt: JwtVerifier | undefined = config.jwt && createJwtVerifier(config.jwt);
  const authenticator = createAuthenticator({ keys, jwt, upstream: keyCheck, keysChange: config.apiKeysFile !== undefined });
  const services: GatewayServices = {
    backend,
    authenticator,
    rateLimiter,
    batching: config.batching,
    productsValues: config.productsValues,
    bus,
    eventTransactions: createEventTransactions(backend),
    upstreamCallsPerRequest: config.upstreamCallsPerRequest,
    history,
  };
  if (config.webhookSecrets.length === 0) logger.warn('WEBHOOK_SECRET is not set: webhooks are accepted without a signature');

  // A backend that is the service itself also sends the service's events.
  const stopWatching = backend.watchTransactionChanges?.((transaction) => {
    bus.publish(serviceEventFor(transaction)).catch((error: unknown) => logger.error({ err: error }, 'could not publish a memory backend event'));
  });
  // Every event, from any instance, refreshes what this one holds of its transaction.
  const stopRefreshing = bus.onEvent((event) =>
    backend.noteTransactionUpdate?.({ ...event.transaction, transactionId: event.transactionId, status: event.status, products: event.products }, eventTime(event)),
  );

  return {
    logger,
    tracing,
    events,
    base,
    backend,
    metrics,
    services,
    responseCache,
    keyCheck,
    guard: requestGuard(authenticator, (credential) => rateLimiter.admit(credential)),
    demo: picked.demo,
    reloadIdentities() {
      keys?.reload();
      jwt?.reload();
    },
    stop() {
      stopWatching?.();
      stopRefreshing();
      keyCheck?.close();
      keys?.close();
    },
    async release() {
      await events.close();
      await redis?.close();
      await backend.close();
      await tracing?.shutdown();
    },
  };
}
