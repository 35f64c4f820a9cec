import type { Env } from './kinds.js';
import { readSettings } from './read.js';
import { isForwardMode, isProduction } from './requirements.js';
import { parseKeyEntry, type KeyEntry } from './key-entries.js';
import { webhookSecrets } from './webhook-secrets.js';
import { fixed } from './fixed.js';
import { redisTarget } from './redis-target.js';
import { DEVELOPMENT_API_KEY, type Values, type VariableName } from './spec.js';

/*
 * Environment → typed, validated Config, parsed once at start.
 * Nothing else reads process.env. The variables, their defaults and docs are
 * declared once in spec.ts, the values that are not variables in fixed.ts;
 * this file only shapes them for the code.
 */

export { ConfigError, type Env } from './kinds.js';
export { DEVELOPMENT_API_KEY } from './spec.js';
export { PERMISSIONS, parseKeyEntry, parseKeyFile, type KeyEntry, type Permission } from './key-entries.js';
export { parseSecretEntry } from './webhook-secrets.js';
export { hashTagOf, type RedisAccess, type RedisTarget } from './redis-target.js';

export type Config = ReturnType<typeof shape>;
export type BackendKind = Config['backend'];
export type LogLevel = Config['logLevel'];
/** Set when `backend` is `rest`. */
export type UpstreamConfig = NonNullable<Config['upstream']>;
/** Forward mode: a client's key is accepted only when the upstream accepts it (src/auth/upstream-key-check.ts). */
export type ForwardKeyCheckConfig = UpstreamConfig['keyCheck'];
/** How per-request loaders turn a batch of ids into backend calls. */
export type BatchingConfig = Config['batching'];
/** Bounds on one GraphQL operation (GraphQL Armor); anything over is refused before it runs. */
export type QueryLimits = Config['limits'];
export type WebSocketLimits = Config['websocket'];
/** Set when JWT_JWKS_URL is. */
export type JwtConfig = NonNullable<Config['jwt']>;
/** Set when HISTORY=on. */
export type HistoryConfig = NonNullable<Config['history']>;
/** Set when an OTLP endpoint is: spans are exported there. */
export type TracingConfig = NonNullable<Config['tracing']>;

/** Throws a one-line ConfigError naming the first variable that is wrong or missing. */
export function loadConfig(env: Env): Config {
  const { values, given, retiredGiven } = readSettings(env);
  return shape(values, given, retiredGiven);
}

function shape(v: Values, given: ReadonlySet<VariableName>, retiredGiven: ReadonlyArray<{ name: string; instead: string }> = []) {
  const production = isProduction(v);
  const forwardMode = isForwardMode(v);
  const checksKeys = !forwardMode;
  // A key file or tokens are the identities asked for: the development key is not added to them.
  const hasOtherIdentities = v.API_KEYS_FILE !== undefined || v.JWT_JWKS_URL !== undefined;
  return {
    port: v.PORT,
    host: v.HOST,
    production,
    /**
     * NODE_ENV when it is set to something other than production, development or test (a typo such as `prod`): the gateway then runs with
     * the development defaults, and says so on start.
     */
    /** Retired variables still set, each with what holds instead: said at start, never silently ignored. */
    retiredVariables: retiredGiven,
    unknownNodeEnv: v.NODE_ENV !== undefined && !['production', 'development', 'test'].includes(v.NODE_ENV) ? v.NODE_ENV : undefined,
    backend: v.BACKEND,
    upstream: upstream(v),
    /**
     * Forward mode (BACKEND=rest without UPSTREAM_API_KEY): each client's own
     * Authorization is sent upstream and the service judges it; the gateway
     * keeps no keys of its own. The one place that says so.
     */
    forwardMode,
    batching: { vendingListThreshold: fixed.vendingListThreshold, transactionConcurrency: fixed.transactionConcurrency },
    /** Keys accepted from clients, with their permissions; empty in forward mode, where the upstream judges them. */
    apiKeys: checksKeys && (given.has('API_KEYS') || !hasOtherIdentities) ? v.API_KEYS.map(entryOf) : [],
    /** More keys, in a file watched and re-read on SIGHUP; never in forward mode. */
    apiKeysFile: checksKeys ? v.API_KEYS_FILE : undefined,
    /** Tokens verified against a JWKS, besides keys; never in forward mode. */
    jwt: checksKeys ? jwt(v) : undefined,
    /** The development key when no key or token is configured outside production; printed on start. */
    devApiKey: checksKeys && !given.has('API_KEYS') && !hasOtherIdentities && !production ? DEVELOPMENT_API_KEY : undefined,
    /**
     * Several while one is rotated out; empty: unsigned webhooks are accepted (on `/webhooks`, and on accounts' paths without their own).
     */
    webhookSecrets: webhookSecrets(v.WEBHOOK_SECRET).plain,
    /** The secrets of accounts that sign their webhooks (`POST /webhooks/{account}`) with their own: only these check them. */
    webhookAccountSecrets: webhookSecrets(v.WEBHOOK_SECRET).byAccount,
    simulator: { mode: v.SIMULATOR, intervalMs: fixed.simulatorIntervalMs },
    /** The currency of a transaction that names none, directly or through its vending (contract/currency.ts). */
    defaultCurrency: v.DEFAULT_CURRENCY.toUpperCase(),
    /** How often machines are read for vendingUpdated (0: never); off in forward mode, which has no key of its own. */
    vendingPollMs: v.VENDING_POLL_MS,
    /** The Redis every instance of the deployment shares (one server, a cluster or a Sentinel group); undefined: everything in process. */
    redis: redisTarget(v),
    databaseUrl: v.DATABASE_URL,
    postgresHistory: fixed.postgresHistory,
    redisPrefix: v.REDIS_PREFIX,
    redisCommandTimeoutMs: fixed.redisCommandTimeoutMs,
    redisReplicaWaitMs: Math.min(fixed.redisReplicaWaitMs, fixed.redisCommandTimeoutMs / 2),
    eventLogSize: v.EVENT_LOG_SIZE,
    /** The in-process log's bound in bytes grows with its bound in events, up to a ceiling. */
    eventLogMaxBytes: Math.min(Math.ceil((v.EVENT_LOG_SIZE * fixed.eventLogBytesPerThousand) / 1_000), fixed.eventLogMostBytes),
    /** What the log keeps below EVENT_LOG_SIZE: the last span of time, and the newest few whatever their age. */
    eventLogKeep: { spanMs: fixed.eventLogKeep.spanMs, leastEvents: Math.min(fixed.eventLogKeep.leastEvents, v.EVENT_LOG_SIZE) },
    /** How resumes read the log: in pages, a few at once. */
    replay: fixed.replay,
    /** The transaction history's bounds; undefined when HISTORY=off. */
    history: v.HISTORY
      ? {
          maxTransactions: v.HISTORY_MAX_TRANSACTIONS,
          retentionMs: v.HISTORY_RETENTION,
          soldStatuses: v.HISTORY_SOLD_STATUSES,
          defaultCurrency: v.DEFAULT_CURRENCY.toUpperCase(),
        }
      : undefined,
    /** Upstream values of the `products` query parameter; an empty value means "send none". */
    productsValues: { flat: v.PRODUCTS_FLAT, planogram: v.PRODUCTS_PLANOGRAM },
    maxBodyBytes: v.MAX_BODY_BYTES,
    /** Results a WebSocket connection or an SSE stream may hold unsent before it is cut. */
    maxUnsentBytes: Math.max(fixed.unsent.bodies * v.MAX_BODY_BYTES, fixed.unsent.leastBytes),
    limits: {
      maxDepth: v.MAX_DEPTH,
      maxAliases: fixed.graphqlLimits.maxAliases,
      maxCost: v.MAX_COST,
      maxTokens: fixed.graphqlLimits.maxTokens,
      maxDirectives: fixed.graphqlLimits.maxDirectives,
      introspection: v.INTROSPECTION,
      // Hints name parts of the schema as introspection does: one switch for both.
      fieldSuggestions: v.INTROSPECTION,
      trustedDocuments: v.TRUSTED_DOCUMENTS,
    },
    websocket: {
      initTimeoutMs: fixed.wsInitTimeoutMs,
      maxSubscriptions: fixed.wsMaxSubscriptions,
      maxMessageBytes: Math.min(fixed.wsMaxMessageBytes, v.MAX_BODY_BYTES),
      keepAliveMs: fixed.wsKeepAliveMs,
    },
    /** GraphiQL's page at /graphql (off in production unless asked for). */
    graphiql: v.GRAPHIQL,
    rateLimitPerSecond: v.RATE_LIMIT_PER_SECOND,
    /** Origins allowed to call /graphql from a browser page; `:*` is any port. */
    corsOrigins: v.CORS_ORIGINS,
    /** Who may read /metrics: a bearer token, and/or a listener of its own. */
    metrics: { token: v.METRICS_TOKEN, port: v.METRICS_PORT },
    requestTimeoutMs: fixed.requestTimeoutMs,
    subscriptionTokenTtlMs: fixed.subscriptionTokenTtlMs,
    upstreamCallsPerRequest: v.UPSTREAM_CALLS_PER_REQUEST,
    headersTimeoutMs: Math.min(fixed.headersTimeoutMs, fixed.requestTimeoutMs),
    /** Fast paths a user chooses; the ones only a benchmark switches are createGateway options (GatewayDeps). */
    fastPaths: { cacheTtlMs: v.CACHE_TTL_MS },
    shutdownTimeoutMs: fixed.shutdownTimeoutMs,
    shutdownGraceMs: v.SHUTDOWN_GRACE_MS,
    logLevel: v.LOG_LEVEL,
    tracing: tracing(v),
    /** The MCP endpoint (`/mcp`): which tools it offers, and the host names it answers to besides loopback and HOST. */
    mcp: { tools: v.MCP, allowedHosts: v.MCP_ALLOWED_HOSTS, sessions: fixed.mcpSessions },
  };
}

/** API_KEYS was validated entry by entry when read. */
function entryOf(text: string): KeyEntry {
  const entry = parseKeyEntry(text);
  if (typeof entry === 'string') throw new Error('API_KEYS was read without its entries checked');
  return entry;
}

/** Only with JWT_JWKS_URL, where the issuer and audience are required. */
function jwt(v: Values) {
  if (v.JWT_JWKS_URL === undefined || v.JWT_ISSUER === undefined) return undefined;
  return {
    jwksUrl: v.JWT_JWKS_URL,
    issuer: v.JWT_ISSUER,
    audience: v.JWT_AUDIENCE,
    clockSkewS: fixed.jwtClockSkewS,
    algorithms: v.JWT_ALGORITHMS,
    permissionsClaim: v.JWT_PERMISSIONS_CLAIM,
    /** The claim naming a token's account; undefined: every token is of the default account. */
    accountClaim: v.JWT_ACCOUNT_CLAIM,
  };
}

/** Only with an OTLP endpoint: tracing is off otherwise, with no SDK loaded. */
function tracing(v: Values) {
  const url = v.OTEL_EXPORTER_OTLP_ENDPOINT && `${v.OTEL_EXPORTER_OTLP_ENDPOINT}/v1/traces`;
  if (!url) return undefined;
  return {
    url,
    headers: otlpHeaders(v.OTEL_EXPORTER_OTLP_HEADERS),
    serviceName: v.OTEL_SERVICE_NAME,
    sampler: v.OTEL_TRACES_SAMPLER,
    samplerRatio: v.OTEL_TRACES_SAMPLER_ARG,
    exportDelayMs: fixed.traceExportDelayMs,
  };
}

/** `name=value,name=value`, values percent-encoded (the OTLP exporter's format); a pair without `=` is dropped. */
function otlpHeaders(text: string | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const pair of (text ?? '').split(',')) {
    const at = pair.indexOf('=');
    if (at <= 0) continue;
    try {
      headers[pair.slice(0, at).trim()] = decodeURIComponent(pair.slice(at + 1).trim());
    } catch {
      headers[pair.slice(0, at).trim()] = pair.slice(at + 1).trim();
    }
  }
  return headers;
}

/** Only with BACKEND=rest, where UPSTREAM_URL is required. */
function upstream(v: Values) {
  if (v.BACKEND !== 'rest' || v.UPSTREAM_URL === undefined) return undefined;
  return {
    url: v.UPSTREAM_URL,
    /** Key sent upstream; absent in forward mode, where each client's own `Authorization` is forwarded. */
    apiKey: v.UPSTREAM_API_KEY,
    timeoutMs: v.UPSTREAM_TIMEOUT_MS,
    // Half the calls under way, each connection carrying the next call as soon as its last one is answered.
    connections: Math.max(1, Math.ceil(v.UPSTREAM_MAX_CONCURRENT / 2)),
    retries: fixed.upstreamRetries,
    maxConcurrent: v.UPSTREAM_MAX_CONCURRENT,
    maxQueued: v.UPSTREAM_MAX_CONCURRENT * fixed.upstreamQueuedPerSlot,
    keyCheck: { ttlMs: fixed.forwardKeyTtlMs, checksPerSecond: fixed.forwardKeyChecksPerSecond },
    breaker: { enabled: true, ...fixed.breaker },
  };
}
