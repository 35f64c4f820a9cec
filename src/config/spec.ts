import { parseKeyEntry } from './key-entries.js';
import { duration, httpUrl, inProduction, integer, list, onOff, oneOf, ratio, redisUrl, text, type AnySetting, type Setting } from './kinds.js';

/*
 * Every environment variable the gateway reads, declared once: its kind and
 * bounds, its default, one line of documentation. The parser (load.ts), the
 * Config type, the README's configuration table and .env.example all come
 * from here (`npm run codegen` writes the last two). Requirements that
 * combine variables are in requirements.ts.
 */

/** The fixed development key: README examples work as written. Never used in production. */
export const DEVELOPMENT_API_KEY = 'dev-key-vending-gateway';

const SECOND = 1_000;
const HOUR = 3_600_000;
const MIB = 1_048_576;
const GIB = 1_024 * MIB;

const server = {
  NODE_ENV: text({ doc: '`production` turns off the development key, introspection, field suggestions and the demo simulator, and refuses unsigned webhooks unless `WEBHOOK_UNSIGNED=allow`' }),
  PORT: integer({ min: 0, max: 65_535, default: 4_000, doc: 'port to listen on; `0` picks a free one' }),
  HOST: text({ default: '127.0.0.1', doc: 'address to listen on (`0.0.0.0` for every interface)' }),
  LOG_LEVEL: oneOf(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], { default: 'info', doc: 'the least severe log lines written; `silent` writes none' }),
  MAX_BODY_BYTES: integer({ min: 1_024, max: 100 * MIB, default: MIB, doc: 'largest request body accepted on any route, in bytes; larger gets 413' }),
  MAX_UNSENT_BYTES: integer({ min: 64 * 1_024, max: GIB, default: 4 * MIB, doc: 'most bytes of results one WebSocket connection or SSE stream may hold unsent for a client that reads too slowly; past it the WebSocket is closed with 1013 and the SSE stream is cut (clients reconnect and resume); keep it a few times the largest event' }),
  REQUEST_TIMEOUT_MS: integer({ min: SECOND, max: HOUR, default: 30 * SECOND, doc: 'longest a client may take to send a whole request' }),
  HEADERS_TIMEOUT_MS: integer({ min: SECOND, max: HOUR, default: 10 * SECOND, doc: 'longest a client may take to send the headers of a request (a WebSocket upgrade too); the connection is closed past it, checked every second; at most `REQUEST_TIMEOUT_MS`' }),
  SHUTDOWN_TIMEOUT_MS: integer({ min: 0, max: 600 * SECOND, default: 10 * SECOND, doc: 'longest a graceful shutdown waits for work in flight before it closes what is left' }),
  SHUTDOWN_GRACE_MS: integer({ min: 0, max: 600 * SECOND, default: 0, doc: 'time a stopping gateway goes on serving (readiness answering 503) before it stops accepting, so a load balancer stops sending it traffic; ends early once no connection is open' }),
  METRICS_TOKEN: text({ secret: true, doc: 'when set, `GET /metrics` needs `Authorization: Bearer <token>` (else 401)' }),
  METRICS_PORT: integer({ min: 0, max: 65_535, doc: 'when set, `GET /metrics` is served only on this port (on `HOST`, a listener of its own) and no longer on `PORT`; `0` picks a free one' }),
};

const clients = {
  API_KEYS: list({
    default: inProduction([], [DEVELOPMENT_API_KEY]),
    secret: true,
    item: { valid: (entry) => typeof parseKeyEntry(entry) !== 'string', accepts: 'comma-separated keys, each alone (every permission) or as key:permissions (read, subscribe, pay joined by +)' },
    doc: 'keys accepted from clients in `Authorization`, comma-separated: `key` has every permission, `key:read+subscribe` only those listed (`read`: queries and REST GETs; `subscribe`: live events; `pay`: the payment mutation and REST PUT); not used in forward mode',
  }),
  API_KEYS_FILE: text({ doc: 'a file of more keys, one entry per line as in `API_KEYS` (`#` comments and blank lines allowed); watched, and re-read on SIGHUP: added keys work and removed ones stop (their open subscriptions end) without a restart' }),
  RATE_LIMIT_PER_SECOND: integer({ min: 0, max: 1_000_000, default: 200, doc: 'requests per second per identity (an API key, or all the tokens of one subject; one-second windows, shared through Redis); `0` is off' }),
  CORS_ORIGINS: list({
    default: inProduction([], ['http://localhost:*', 'http://127.0.0.1:*']),
    item: { pattern: /^https?:\/\/(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(:(\d{1,5}|\*))?$/, accepts: 'comma-separated origins (scheme://host, :port or :* for any port)' },
    doc: 'origins whose browser pages may call `/graphql` (CORS; never with credentials: the key travels in `Authorization`); other origins get no CORS headers',
  }),
};

const tokens = {
  JWT_JWKS_URL: httpUrl({ doc: "when set, clients may also send a JWT (`Authorization: Bearer <token>`) signed by a key of this JWKS; keys are fetched and cached by jose's rules (re-fetched for an unknown `kid`, at most every 30 s), and again at once on SIGHUP" }),
  JWT_ISSUER: text({ doc: 'the `iss` a token must carry' }),
  JWT_AUDIENCE: list({ doc: 'the `aud` a token must carry (one of these, comma-separated)' }),
  JWT_CLOCK_SKEW_S: integer({ min: 0, max: 600, default: 30, doc: 'seconds of clock difference tolerated when judging `exp` and `nbf`' }),
  JWT_ALGORITHMS: list({
    default: ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'],
    item: { pattern: /^(RS|PS|ES)(256|384|512)$|^EdDSA$/, accepts: 'comma-separated asymmetric JWS algorithms (RS*, PS*, ES*, EdDSA)' },
    doc: 'signature algorithms a token may use; `none` and HMAC (`HS*`) are never accepted',
  }),
  JWT_PERMISSIONS_CLAIM: text({ default: 'permissions', doc: "claim holding a token's permissions: an array (`[\"read\",\"subscribe\"]`) or a space-separated string (as `scope` is); unknown words are ignored" }),
};

const backend = {
  BACKEND: oneOf(['memory', 'rest'], { default: 'memory', doc: '`memory`: embedded demo data; `rest`: the real service at `UPSTREAM_URL`' }),
  PRODUCTS_FLAT: text({ default: 'flat', emptyIsValue: true, doc: "value of the upstream's `products` query parameter for the flat view; empty sends no parameter" }),
  PRODUCTS_PLANOGRAM: text({ default: 'planogram', doc: "value of the upstream's `products` query parameter for the planogram view" }),
  SIMULATOR: oneOf(['auto', 'on', 'off'], { default: inProduction('off', 'auto'), doc: "memory backend's demo simulator: `auto` runs it while a dashboard page is open, `on` always, `off` never" }),
  SIMULATOR_INTERVAL_MS: integer({ min: 50, max: HOUR, default: 3 * SECOND, doc: "the simulator changes a random demo transaction's status this often" }),
  VENDING_LIST_THRESHOLD: integer({ min: 2, max: 1_000_000, default: 3, doc: 'a batch of this many vending ids or more is read with one `GET /vendings` instead of one call each' }),
  TRANSACTION_CONCURRENCY: integer({ min: 1, max: 1_000, default: 16, doc: 'most transaction reads in flight for one batch' }),
};

const upstream = {
  UPSTREAM_URL: httpUrl({ doc: 'base address of the REST service' }),
  UPSTREAM_API_KEY: text({ secret: true, doc: 'key the gateway sends upstream, as the whole `Authorization` value (add `Bearer ` yourself if the service wants it); unset ("forward mode"): each client\'s own `Authorization` is forwarded unchanged and a key counts only once the service accepts it' }),
  FORWARD_KEY_TTL_MS: integer({ min: 100, max: HOUR, default: 30 * SECOND, doc: "forward mode: how long the service's verdict on a client key is remembered, and how often keys with open subscriptions are checked again (a revoked key loses its live feed within about this time)" }),
  FORWARD_KEY_CHECKS_PER_SECOND: integer({ min: 1, max: 100_000, default: 20, doc: 'forward mode: most key checks the instance sends the service in any one second; past it a new key gets `RATE_LIMITED` (429 with `Retry-After`, WebSocket close 1013)' }),
  UPSTREAM_TIMEOUT_MS: integer({ min: 1, max: 600 * SECOND, default: 10 * SECOND, doc: 'deadline of a whole upstream call: the wait for a free connection, every attempt, retry delay and body byte; past it: `UPSTREAM_TIMEOUT` (REST 504), counted as a failure by the circuit breaker' }),
  UPSTREAM_CONNECTIONS: integer({ min: 1, max: 10_000, default: 50, doc: 'most keep-alive connections to the upstream' }),
  UPSTREAM_RETRIES: integer({ min: 0, max: 2, default: 2, doc: 'retries of a GET after a reset connection or a 502/503/504; a PUT is never retried' }),
  UPSTREAM_MAX_CONCURRENT: integer({ min: 1, max: 100_000, default: 100, doc: 'most upstream requests under way at once' }),
  UPSTREAM_CALLS_PER_REQUEST: integer({ min: 1, max: 1_000_000, default: 500, doc: 'most upstream calls one request (or one WebSocket operation) may start; the fields past it fail with `BAD_USER_INPUT` (`extensions.limit`) and start none; reads shared with another request or served from the cache count nothing' }),
  UPSTREAM_MAX_QUEUED: integer({ min: 0, max: 1_000_000, default: 1_000, doc: 'most upstream requests waiting for a slot; more fail at once' }),
  UPSTREAM_BREAKER: onOff({ default: true, doc: 'circuit breaker in front of the upstream' }),
  UPSTREAM_BREAKER_FAILURE_PERCENT: integer({ min: 1, max: 100, default: 50, doc: 'the breaker opens when more than this % of the calls in its window failed…' }),
  UPSTREAM_BREAKER_MIN_CALLS: integer({ min: 1, max: 1_000_000, default: 20, doc: '…and the window held at least this many calls' }),
  UPSTREAM_BREAKER_WINDOW_MS: integer({ min: 10, max: HOUR, default: 10 * SECOND, doc: "length of the breaker's window" }),
  UPSTREAM_BREAKER_RESET_MS: integer({ min: 10, max: HOUR, default: 10 * SECOND, doc: 'how long the breaker stays open before one probe call' }),
};

const events = {
  WEBHOOK_SECRET: list({
    secret: true,
    item: { pattern: /^whsec_[A-Za-z0-9+/=]+$/, accepts: 'Standard Webhooks secrets (whsec_ followed by base64), comma-separated' },
    doc: 'Standard Webhooks secret(s), comma-separated while one is rotated out; when set, unsigned or badly signed webhooks get 401; when unset, webhooks are accepted unsigned (a warning at start)',
  }),
  WEBHOOK_UNSIGNED: oneOf(['allow', 'refuse'], { default: inProduction('refuse', 'allow'), doc: 'without `WEBHOOK_SECRET`: `allow` takes unsigned webhooks, `refuse` stops the gateway from starting; no effect when `WEBHOOK_SECRET` is set' }),
  REDIS_URL: redisUrl({ doc: 'events, webhook dedupe, the replay log and rate limits are shared by every instance through this Redis' }),
  REDIS_PREFIX: text({ default: 'vending-gateway:', doc: 'prefix of every Redis key; the instances of one deployment share it' }),
  REDIS_COMMAND_TIMEOUT_MS: integer({ min: 50, max: 60 * SECOND, default: SECOND, doc: 'longest wait for a Redis answer; a Redis silent this long (asked at least this often) counts as away until it answers again: webhooks get 503, rate limits fail open (not enforced), readiness says 503' }),
  EVENT_LOG_SIZE: integer({ min: 1, max: 1_000_000, default: 1_000, doc: 'events kept for resuming subscribers (`after`, `Last-Event-ID`)' }),
  EVENT_LOG_MAX_BYTES: integer({ min: MIB, max: 64 * 1_024 * MIB, default: 64 * MIB, doc: 'without `REDIS_URL`: most bytes of events (their JSON) the in-process log keeps, besides `EVENT_LOG_SIZE`; the oldest go first (with Redis the log is in Redis: bound it there with `maxmemory`)' }),
};

const DAY = 24 * HOUR;

const history = {
  HISTORY: onOff({ default: true, doc: 'the transaction history (`recentTransactions`, `transactionStats`, `Transaction.history`), fed by every distinct webhook event and payment update; in process, or in Redis with `REDIS_URL`; `off`: those fields answer `BAD_USER_INPUT`' }),
  HISTORY_MAX_TRANSACTIONS: integer({ min: 1, max: 10_000_000, default: 100_000, doc: 'most transactions the history keeps; past it the least recently updated go first' }),
  HISTORY_RETENTION: duration({ min: 60 * SECOND, max: 366 * DAY, default: 7 * DAY, doc: 'a transaction the gateway has seen no change of for this long leaves the history (counted from when the gateway received its latest change, not from the events\' own timestamps), and so do statistics nothing changed for this long' }),
  HISTORY_SOLD_STATUSES: list({ doc: 'statuses whose transactions count as sold in `transactionStats` (`totalSold`, top products), comma-separated; unset: every status (the contract does not list them)' }),
};

const graphql = {
  MAX_DEPTH: integer({ min: 1, max: 1_000, default: 10, doc: 'deepest selection in one operation (GraphQL Armor)' }),
  MAX_ALIASES: integer({ min: 0, max: 100_000, default: 50, doc: 'most aliases in one operation' }),
  MAX_COST: integer({ min: 1, max: 10_000_000, default: 5_000, doc: "highest cost of one operation, in GraphQL Armor's units (a leaf 1, an object 2, ×1.5 per level), where a list argument multiplies its field's cost by its length, variables included" }),
  MAX_TOKENS: integer({ min: 10, max: 10_000_000, default: 5_000, doc: 'most tokens in one document' }),
  MAX_DIRECTIVES: integer({ min: 0, max: 100_000, default: 50, doc: 'most directives in one operation' }),
  INTROSPECTION: onOff({ default: inProduction(false, true), doc: 'whether the schema may be introspected' }),
  FIELD_SUGGESTIONS: onOff({ default: inProduction(false, true), doc: 'whether errors carry "Did you mean …?" hints (fields, arguments, types, enum values, input fields; in documents and in variables)' }),
  GRAPHIQL: onOff({ default: inProduction(false, true), doc: 'whether a browser opening `/graphql` gets GraphiQL, served from the gateway itself (nothing loaded from the internet; strict Content-Security-Policy); never with `TRUSTED_DOCUMENTS=only`; with `INTROSPECTION=off` it runs what is typed but cannot complete or document it' }),
  TRUSTED_DOCUMENTS: oneOf(['any', 'only'], { default: 'any', doc: '`only`: accept just the operations of `schema/operations/`, by hash' }),
};

const websocket = {
  WS_INIT_TIMEOUT_MS: integer({ min: 100, max: 600 * SECOND, default: 3 * SECOND, doc: 'time a WebSocket client has to send `connection_init`' }),
  WS_MAX_SUBSCRIPTIONS: integer({ min: 1, max: 100_000, default: 100, doc: 'most subscriptions open on one WebSocket connection' }),
  WS_MAX_MESSAGE_BYTES: integer({ min: 1_024, max: 100 * MIB, default: 65_536, doc: 'largest WebSocket message accepted, in bytes' }),
  WS_KEEPALIVE_MS: integer({ min: 0, max: 600 * SECOND, default: 12 * SECOND, doc: 'interval of WebSocket pings; a peer that does not answer one is dropped' }),
};

const fastPaths = {
  CACHE_TTL_MS: integer({ min: 0, max: HOUR, default: 0, doc: "serve transactions and vendings, and whole GraphQL results, from a per-key cache for this long (`0` is off); webhooks and payment updates drop what holds a transaction" }),
};

// The standard OpenTelemetry names (opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables/),
// read here like every other variable: the SDK is handed values, it reads no environment itself.
const tracing = {
  OTEL_EXPORTER_OTLP_ENDPOINT: httpUrl({ doc: 'base address of an OTLP/HTTP collector (traces go to `<address>/v1/traces`, as JSON); when set (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`), the gateway exports spans; unset, tracing is off and costs nothing' }),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: httpUrl({ doc: 'full address traces are posted to, instead of the one made from `OTEL_EXPORTER_OTLP_ENDPOINT`' }),
  OTEL_EXPORTER_OTLP_HEADERS: text({ secret: true, doc: 'headers sent with every export, `name=value` pairs separated by commas (values percent-encoded), e.g. a collector\'s API key' }),
  OTEL_SERVICE_NAME: text({ default: 'vending-gateway', doc: '`service.name` of the exported spans' }),
  OTEL_TRACES_SAMPLER: oneOf(['always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'], {
    default: 'parentbased_always_on',
    doc: 'which traces are kept, as the OpenTelemetry SDK reads it: `parentbased_*` follows an incoming `traceparent`\'s sampled flag, `*traceidratio` keeps `OTEL_TRACES_SAMPLER_ARG` of the traces it starts',
  }),
  OTEL_TRACES_SAMPLER_ARG: ratio({ default: 1, doc: 'the ratio of the `traceidratio` samplers' }),
  OTEL_BSP_SCHEDULE_DELAY: integer({ min: 1, max: 600 * SECOND, default: 5 * SECOND, doc: 'longest a finished span waits before it is exported, in ms (spans are sent in batches; shutdown sends what is left)' }),
};

/** The settings by section, in the order the docs list them. */
export const sections = {
  'Server': server,
  'Clients': clients,
  'Tokens (JWT)': tokens,
  'Backend': backend,
  'REST upstream (`BACKEND=rest`)': upstream,
  'Webhooks and events': events,
  'Transaction history': history,
  'GraphQL limits': graphql,
  'WebSocket limits (per connection)': websocket,
  'Fast paths': fastPaths,
  'Tracing (OpenTelemetry)': tracing,
} satisfies Record<string, Record<string, AnySetting>>;

export const spec = { ...server, ...clients, ...tokens, ...backend, ...upstream, ...events, ...history, ...graphql, ...websocket, ...fastPaths, ...tracing };

export type Spec = typeof spec;
export type VariableName = keyof Spec;
/** The value of every variable once read, its default applied. */
export type Values = { [Name in VariableName]: Spec[Name] extends Setting<infer V> ? V : never };
