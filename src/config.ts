/*
 * Environment → typed, validated Config, parsed once at start (DESIGN §2).
 * Nothing else reads process.env. A bad value throws a ConfigError whose
 * message is one line naming the variable and what it accepts.
 */

export type BackendKind = 'memory' | 'rest';
export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

export interface UpstreamConfig {
  /** Base address of the REST service, without a trailing slash. */
  url: string;
  /** Key sent upstream; when absent each client's own `Authorization` is forwarded. */
  apiKey: string | undefined;
  /** @default 10000 */
  timeoutMs: number;
  /** Most open connections to the upstream. @default 50 */
  connections: number;
  /** Most retries of an idempotent GET. @default 2 */
  retries: number;
  /** Most upstream requests under way at once. @default 100 */
  maxConcurrent: number;
  /** Most requests waiting for one of those; more fail at once. @default 1000 */
  maxQueued: number;
  /** Forward mode only (no `apiKey`): how clients' own keys are checked with the upstream. */
  keyCheck: ForwardKeyCheckConfig;
  /** Circuit breaker in front of the upstream. */
  breaker: {
    enabled: boolean;
    /** Opens when more than this % of calls in the window failed… @default 50 */
    failureThresholdPercent: number;
    /** …and the window held at least this many calls. @default 20 */
    minimumCalls: number;
    /** @default 10000 */
    windowMs: number;
    /** How long it stays open before one probe call. @default 10000 */
    resetTimeoutMs: number;
  };
}

/** Forward mode: a client's key is accepted only when the upstream accepts it (src/upstream-key-check.ts). */
export interface ForwardKeyCheckConfig {
  /** How long a verdict is remembered, and how often keys with open subscriptions are checked again. @default 30000 */
  ttlMs: number;
  /** Most upstream key checks started in any one second, for the whole instance. @default 20 */
  checksPerSecond: number;
}

/** How per-request loaders turn a batch of ids into backend calls. */
export interface BatchingConfig {
  /** A batch of at least this many vending ids is read with one list call. @default 3 */
  vendingListThreshold: number;
  /** Most transaction reads in flight for one batch. @default 16 */
  transactionConcurrency: number;
}

/** Bounds on one GraphQL operation (GraphQL Armor); anything over is refused before it runs. */
export interface QueryLimits {
  /** @default 10 */
  maxDepth: number;
  /** @default 50 */
  maxAliases: number;
  /** @default 5000 (GraphQL Armor's cost units) */
  maxCost: number;
  /** @default 5000 */
  maxTokens: number;
  /** @default 50 */
  maxDirectives: number;
  /** Whether the schema may be introspected. @default off in production, on otherwise */
  introspection: boolean;
  /** Whether "Did you mean …?" hints are shown. @default off in production, on otherwise */
  fieldSuggestions: boolean;
  /** `only`: accept just the operations of schema/operations/, by hash. @default 'any' */
  trustedDocuments: 'any' | 'only';
}

export interface WebSocketLimits {
  /** Time a client has to send `connection_init`. @default 3000 */
  initTimeoutMs: number;
  /** Most subscriptions open on one connection. @default 100 */
  maxSubscriptions: number;
  /** Largest message accepted, in bytes. @default 65536 */
  maxMessageBytes: number;
  /** Interval of keep-alive pings; a peer that does not answer one is dropped. @default 12000 */
  keepAliveMs: number;
}

export interface Config {
  port: number;
  host: string;
  production: boolean;
  backend: BackendKind;
  /** Set when `backend` is `rest`. */
  upstream: UpstreamConfig | undefined;
  batching: BatchingConfig;
  /** Keys accepted from clients; empty when clients' keys are forwarded upstream unchecked. */
  apiKeys: string[];
  /** The key made up for development when `API_KEYS` is unset; printed on start. */
  devApiKey: string | undefined;
  /**
   * Standard Webhooks secrets (`whsec_…`); several while one is rotated out.
   * Empty: unsigned webhooks accepted, which in production needs `WEBHOOK_UNSIGNED=allow`.
   */
  webhookSecrets: string[];
  /**
   * The memory backend's demo simulator, which changes a random transaction
   * every `intervalMs`: `auto` runs it while a dashboard page is open (it asks
   * for it), `on` always, `off` never. @default auto (off in production)
   */
  simulator: { mode: 'auto' | 'on' | 'off'; intervalMs: number };
  /** When set, events, dedupe and replay are shared by every instance through this Redis. */
  redisUrl: string | undefined;
  /** Prefix of every Redis key, so deployments can share a Redis. @default 'vending-gateway:' */
  redisPrefix: string;
  /** Events kept for resuming subscribers (`after`, `Last-Event-ID`). @default 1000 */
  eventLogSize: number;
  /** Upstream values of the `products` query parameter; an empty value means "send none". */
  productsValues: { flat: string; planogram: string };
  /** Largest request body accepted on any route, in bytes. @default 1048576 */
  maxBodyBytes: number;
  limits: QueryLimits;
  websocket: WebSocketLimits;
  /** Requests per second one API key may make (fixed one-second windows); 0 is off. @default 200 */
  rateLimitPerSecond: number;
  /** Fast paths, each switchable so a benchmark can show its effect. */
  fastPaths: {
    /** Concurrent identical reads under the same key share one backend call. @default true */
    coalesce: boolean;
    /** How long transactions and vendings are served from a per-key cache; 0 is off. @default 0 */
    cacheTtlMs: number;
    /** Subscribers with the same document, variables and key share one execution per event. @default true */
    subscriptionSharing: boolean;
    /** GraphQL queries and REST paths from non-browser clients skip the Fetch adapter (src/http/direct-lane.ts). @default true */
    directLane: boolean;
  };
  /** Longest a client may take to send a whole request. @default 30000 */
  requestTimeoutMs: number;
  /** Longest a graceful shutdown waits for in-flight work before closing what is left. @default 10000 */
  shutdownTimeoutMs: number;
  /**
   * How long a shutting-down gateway goes on serving as usual, readiness
   * answering 503, before it stops accepting, so a load balancer stops sending
   * it traffic; it ends early once no connection is open. @default 0
   */
  shutdownGraceMs: number;
  logLevel: LogLevel;
}

export class ConfigError extends Error {
  constructor(variable: string, accepts: string, got: string | undefined) {
    super(`${variable} must be ${accepts}${got === undefined ? '' : `, got ${JSON.stringify(got)}`}`);
    this.name = 'ConfigError';
  }
}

/** The fixed development key: README examples work as written. Never used in production. */
export const DEVELOPMENT_API_KEY = 'dev-key-vending-gateway';

type Env = Record<string, string | undefined>;

const present = (env: Env, name: string): string | undefined => {
  const value = env[name]?.trim();
  return value === '' ? undefined : value;
};

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = present(env, name);
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!/^\d+$/.test(raw) || value < min || value > max) {
    throw new ConfigError(name, `a whole number from ${min} to ${max}`, raw);
  }
  return value;
}

function oneOf<T extends string>(env: Env, name: string, allowed: readonly T[], fallback: T): T {
  const raw = present(env, name);
  if (raw === undefined) return fallback;
  if (!(allowed as readonly string[]).includes(raw)) {
    throw new ConfigError(name, `one of ${allowed.join(', ')}`, raw);
  }
  return raw as T;
}

function httpUrl(env: Env, name: string): string | undefined {
  const raw = present(env, name);
  if (raw === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(name, 'an http:// or https:// address', raw);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ConfigError(name, 'an http:// or https:// address', raw);
  }
  return raw.replace(/\/+$/, '');
}

function onOff(env: Env, name: string, fallback: boolean): boolean {
  return oneOf(env, name, ['on', 'off'] as const, fallback ? 'on' : 'off') === 'on';
}

function queryLimits(env: Env, production: boolean): QueryLimits {
  return {
    maxDepth: integer(env, 'MAX_DEPTH', 10, 1, 1_000),
    maxAliases: integer(env, 'MAX_ALIASES', 50, 0, 100_000),
    maxCost: integer(env, 'MAX_COST', 5_000, 1, 10_000_000),
    maxTokens: integer(env, 'MAX_TOKENS', 5_000, 10, 10_000_000),
    maxDirectives: integer(env, 'MAX_DIRECTIVES', 50, 0, 100_000),
    introspection: onOff(env, 'INTROSPECTION', !production),
    fieldSuggestions: onOff(env, 'FIELD_SUGGESTIONS', !production),
    trustedDocuments: oneOf(env, 'TRUSTED_DOCUMENTS', ['any', 'only'] as const, 'any'),
  };
}

function webSocketLimits(env: Env): WebSocketLimits {
  return {
    initTimeoutMs: integer(env, 'WS_INIT_TIMEOUT_MS', 3_000, 100, 600_000),
    maxSubscriptions: integer(env, 'WS_MAX_SUBSCRIPTIONS', 100, 1, 100_000),
    maxMessageBytes: integer(env, 'WS_MAX_MESSAGE_BYTES', 65_536, 1_024, 104_857_600),
    keepAliveMs: integer(env, 'WS_KEEPALIVE_MS', 12_000, 0, 600_000),
  };
}

function redisUrl(env: Env): string | undefined {
  const raw = present(env, 'REDIS_URL');
  if (raw === undefined) return undefined;
  if (!/^rediss?:\/\/./.test(raw)) // The address may hold a password: it is not repeated.
    throw new ConfigError('REDIS_URL', 'a redis:// or rediss:// address', undefined);
  return raw;
}

function list(env: Env, name: string): string[] {
  return (present(env, name) ?? '')
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
}

function upstreamConfig(env: Env): UpstreamConfig {
  const url = httpUrl(env, 'UPSTREAM_URL');
  if (url === undefined) throw new ConfigError('UPSTREAM_URL', 'set when BACKEND=rest', undefined);
  return {
    url,
    apiKey: present(env, 'UPSTREAM_API_KEY'),
    timeoutMs: integer(env, 'UPSTREAM_TIMEOUT_MS', 10_000, 1, 600_000),
    connections: integer(env, 'UPSTREAM_CONNECTIONS', 50, 1, 10_000),
    retries: integer(env, 'UPSTREAM_RETRIES', 2, 0, 2),
    maxConcurrent: integer(env, 'UPSTREAM_MAX_CONCURRENT', 100, 1, 100_000),
    maxQueued: integer(env, 'UPSTREAM_MAX_QUEUED', 1_000, 0, 1_000_000),
    keyCheck: {
      ttlMs: integer(env, 'FORWARD_KEY_TTL_MS', 30_000, 100, 3_600_000),
      checksPerSecond: integer(env, 'FORWARD_KEY_CHECKS_PER_SECOND', 20, 1, 100_000),
    },
    breaker: {
      enabled: onOff(env, 'UPSTREAM_BREAKER', true),
      failureThresholdPercent: integer(env, 'UPSTREAM_BREAKER_FAILURE_PERCENT', 50, 1, 100),
      minimumCalls: integer(env, 'UPSTREAM_BREAKER_MIN_CALLS', 20, 1, 1_000_000),
      windowMs: integer(env, 'UPSTREAM_BREAKER_WINDOW_MS', 10_000, 10, 3_600_000),
      resetTimeoutMs: integer(env, 'UPSTREAM_BREAKER_RESET_MS', 10_000, 10, 3_600_000),
    },
  };
}

export function loadConfig(env: Env): Config {
  const production = env.NODE_ENV === 'production';
  const backend = oneOf(env, 'BACKEND', ['memory', 'rest'] as const, 'memory');
  const upstream = backend === 'rest' ? upstreamConfig(env) : undefined;
  // In forward mode the upstream judges each client's own key (DESIGN §2).
  const checksKeys = upstream === undefined || upstream.apiKey !== undefined;
  let apiKeys = list(env, 'API_KEYS');
  let devApiKey: string | undefined;
  if (checksKeys && apiKeys.length === 0) {
    if (production) throw new ConfigError('API_KEYS', 'set (comma-separated client keys) when NODE_ENV=production', undefined);
    devApiKey = DEVELOPMENT_API_KEY;
    apiKeys = [devApiKey];
  }
  const webhookSecrets = list(env, 'WEBHOOK_SECRET');
  if (webhookSecrets.some((secret) => !/^whsec_[A-Za-z0-9+/=]+$/.test(secret))) {
    // The value is a secret: it is not repeated in the message.
    throw new ConfigError('WEBHOOK_SECRET', 'Standard Webhooks secrets (whsec_ followed by base64), comma-separated', undefined);
  }
  // Unsigned webhooks let anyone publish events to every subscriber: in production only on request.
  const unsigned = oneOf(env, 'WEBHOOK_UNSIGNED', ['allow', 'refuse'] as const, production ? 'refuse' : 'allow');
  if (unsigned === 'refuse' && webhookSecrets.length === 0) {
    const when = production && present(env, 'WEBHOOK_UNSIGNED') === undefined
      ? 'set when NODE_ENV=production (or WEBHOOK_UNSIGNED=allow to accept unsigned webhooks)'
      : 'set when WEBHOOK_UNSIGNED=refuse';
    throw new ConfigError('WEBHOOK_SECRET', when, undefined);
  }
  return {
    port: integer(env, 'PORT', 4000, 0, 65_535),
    host: present(env, 'HOST') ?? '127.0.0.1',
    production,
    backend,
    upstream,
    batching: {
      vendingListThreshold: integer(env, 'VENDING_LIST_THRESHOLD', 3, 2, 1_000_000),
      transactionConcurrency: integer(env, 'TRANSACTION_CONCURRENCY', 16, 1, 1_000),
    },
    apiKeys: checksKeys ? apiKeys : [],
    devApiKey,
    webhookSecrets,
    simulator: {
      mode: oneOf(env, 'SIMULATOR', ['auto', 'on', 'off'] as const, production ? 'off' : 'auto'),
      intervalMs: integer(env, 'SIMULATOR_INTERVAL_MS', 3_000, 50, 3_600_000),
    },
    redisUrl: redisUrl(env),
    redisPrefix: present(env, 'REDIS_PREFIX') ?? 'vending-gateway:',
    eventLogSize: integer(env, 'EVENT_LOG_SIZE', 1_000, 1, 1_000_000),
    productsValues: {
      flat: env.PRODUCTS_FLAT?.trim() ?? 'flat',
      planogram: present(env, 'PRODUCTS_PLANOGRAM') ?? 'planogram',
    },
    maxBodyBytes: integer(env, 'MAX_BODY_BYTES', 1_048_576, 1_024, 104_857_600),
    limits: queryLimits(env, production),
    websocket: webSocketLimits(env),
    rateLimitPerSecond: integer(env, 'RATE_LIMIT_PER_SECOND', 200, 0, 1_000_000),
    requestTimeoutMs: integer(env, 'REQUEST_TIMEOUT_MS', 30_000, 1_000, 3_600_000),
    fastPaths: {
      coalesce: onOff(env, 'UPSTREAM_COALESCE', true),
      cacheTtlMs: integer(env, 'CACHE_TTL_MS', 0, 0, 3_600_000),
      subscriptionSharing: onOff(env, 'SUBSCRIPTION_SHARING', true),
      directLane: onOff(env, 'DIRECT_LANE', true),
    },
    shutdownTimeoutMs: integer(env, 'SHUTDOWN_TIMEOUT_MS', 10_000, 0, 600_000),
    shutdownGraceMs: integer(env, 'SHUTDOWN_GRACE_MS', 0, 0, 600_000),
    logLevel: oneOf(env, 'LOG_LEVEL', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const, 'info'),
  };
}
