import { parseKeyEntry } from './key-entries.js';
import { nodesProblem, parseRedisNode, parseSentinelMaster, prefixProblem } from './redis-target.js';
import { parseSecretEntry } from './webhook-secrets.js';
import {
  duration,
  httpUrl,
  inProduction,
  integer,
  list,
  onOff,
  oneOf,
  postgresUrl,
  problemOf,
  ratio,
  redisUrl,
  text,
  type AnySetting,
  type Setting,
} from './kinds.js';

/*
 * Every environment variable the gateway reads, declared once: its kind and
 * bounds, its default, one line of documentation. The parser (read.ts, shaped by config.ts), the
 * Config type, the README's configuration table and .env.example all come
 * from here (`npm run codegen` writes the last two). Requirements that
 * combine variables are in requirements.ts. A variable is here when an
 * operator has a reason to change it, and its doc says when; the values no
 * operator needs to choose are constants in fixed.ts.
 */

/** The fixed development key: README examples work as written. Never used in production. */
export const DEVELOPMENT_API_KEY = 'dev-key-vending-gateway';

const SECOND = 1_000;
const HOUR = 3_600_000;
const MIB = 1_048_576;

const server = {
  NODE_ENV: text({
    doc:
      'set `production` on every deployed instance: it turns off the development key, introspection, field suggestions, GraphiQL and ' +
      'the demo simulator, and refuses unsigned webhooks unless `WEBHOOK_UNSIGNED=allow`; unset for development',
  }),
  PORT: integer({
    min: 0,
    max: 65_535,
    default: 4_000,
    doc: 'port to listen on; change it when your platform assigns one or 4000 is taken; `0` picks a free one',
  }),
  HOST: text({
    default: '127.0.0.1',
    doc: 'address to listen on; `0.0.0.0` (every interface) in a container or whenever clients connect from other hosts',
  }),
  LOG_LEVEL: oneOf(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], {
    default: 'info',
    doc:
      'the least severe log lines written: `debug` while investigating (every upstream call is logged), `warn` to keep logs small; ' +
      '`silent` writes none',
  }),
  MAX_BODY_BYTES: integer({
    min: 1_024,
    max: 100 * MIB,
    default: MIB,
    doc:
      'largest request body accepted on any route, in bytes (larger gets 413); raise it only when the service sends larger webhooks. ' +
      'It also bounds a WebSocket message (at most 64 KiB) and what a slow subscriber may leave unread (4 times it, at least 64 KiB: ' +
      'past it the WebSocket is closed with 1013 and the SSE stream cut, and the client resumes); a whole request must arrive within ' +
      '30 s, its headers within 10 s',
  }),
  SHUTDOWN_GRACE_MS: integer({
    min: 0,
    max: 600 * SECOND,
    default: 0,
    doc:
      'behind a load balancer (or in Kubernetes), the time it takes to stop sending traffic to a stopping instance: it goes on serving ' +
      'that long (readiness answering 503) before it stops accepting, ending early once no connection is open; then work in flight ' +
      "gets up to 10 s more, so keep the orchestrator's kill deadline above this plus 10 s",
  }),
  METRICS_TOKEN: text({
    secret: true,
    doc: 'set it when anyone besides your scraper can reach `/metrics`: it then needs `Authorization: Bearer <token>` (else 401)',
  }),
  METRICS_PORT: integer({
    min: 0,
    max: 65_535,
    doc:
      'set it to serve `GET /metrics` only on a port of its own (on `HOST`) that is not exposed with `PORT`; it is then no longer on ' +
      '`PORT`; `0` picks a free one',
  }),
};

const clients = {
  API_KEYS: list({
    default: inProduction([], [DEVELOPMENT_API_KEY]),
    secret: true,
    item: {
      problem: problemOf(parseKeyEntry),
      accepts:
        'comma-separated keys, each alone (every permission) or as key:permissions (read, subscribe, pay joined by +), optionally ' +
        'followed by @account',
    },
    doc:
      'keys accepted from clients in `Authorization`, comma-separated: `key` has every permission, `key:read+subscribe` only those ' +
      'listed (`read`: queries and REST GETs; `subscribe`: live events; `pay`: the payment mutation and REST PUT); give each client ' +
      'its own key with only the permissions it needs (a dashboard: `read+subscribe`). When one gateway serves several accounts, ' +
      '`key:read+subscribe@acct-a` makes the key one of account `acct-a`: it sees only the events, history and statistics of ' +
      '`POST /webhooks/acct-a` (a key naming none is of the default account, `POST /webhooks`); not used in forward mode',
  }),
  API_KEYS_FILE: text({
    doc:
      'a file of more keys, one entry per line as in `API_KEYS` (`#` comments and blank lines allowed); use it when keys change while ' +
      'the gateway runs or come from a mounted secret: watched, and re-read on SIGHUP, so added keys work and removed ones stop (their ' +
      'open subscriptions end) without a restart',
  }),
  RATE_LIMIT_PER_SECOND: integer({
    min: 0,
    max: 1_000_000,
    default: 200,
    doc:
      'requests per second per identity (an API key, or all the tokens of one subject; one-second windows, shared through Redis); ' +
      'lower it when one client could overload the service, raise it for a trusted client that sends more (a backend job); `0` is off',
  }),
  CORS_ORIGINS: list({
    default: inProduction([], ['http://localhost:*', 'http://127.0.0.1:*']),
    item: {
      pattern: /^https?:\/\/(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(:(\d{1,5}|\*))?$/,
      accepts: 'comma-separated origins (scheme://host, :port or :* for any port)',
    },
    doc:
      'origins whose browser pages may call `/graphql` (CORS; never with credentials: the key travels in `Authorization`); list the ' +
      'sites your dashboards are served from when that is not the gateway itself; other origins get no CORS headers',
  }),
};

const tokens = {
  JWT_JWKS_URL: httpUrl({
    doc:
      'set it when clients sign in with an identity provider: they may then also send a JWT (`Authorization: Bearer <token>`) signed ' +
      "by a key of this JWKS; keys are fetched and cached by jose's rules (re-fetched for an unknown `kid`, at most every 30 s), and " +
      'again at once on SIGHUP; a token must carry `exp` (one without it, which would never expire, is refused with 401), and `exp` ' +
      'and `nbf` are judged with 30 s of clock difference tolerated',
  }),
  JWT_ISSUER: text({ doc: "the `iss` a token must carry: your identity provider's issuer" }),
  JWT_AUDIENCE: list({
    doc:
      'the `aud` a token must carry (one of these, comma-separated): the audience your identity provider gives tokens meant for this ' +
      'gateway',
  }),
  JWT_ALGORITHMS: list({
    default: ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'],
    item: { pattern: /^(RS|PS|ES)(256|384|512)$|^EdDSA$/, accepts: 'comma-separated asymmetric JWS algorithms (RS*, PS*, ES*, EdDSA)' },
    doc:
      'signature algorithms a token may use; narrow it to the one your identity provider signs with (e.g. `RS256`); `none` and HMAC ' +
      '(`HS*`) are never accepted',
  }),
  JWT_PERMISSIONS_CLAIM: text({
    default: 'permissions',
    doc:
      'claim holding a token\'s permissions: an array (`["read","subscribe"]`) or a space-separated string (as `scope` is); change it ' +
      'when your identity provider puts them in another claim (e.g. `scope`); unknown words are ignored',
  }),
  JWT_ACCOUNT_CLAIM: text({
    doc:
      'set it when one gateway serves several accounts: the claim naming the account a token belongs to (its string value, an account ' +
      'name as in `POST /webhooks/{account}`); a token whose claim is missing or names no valid account is then refused (401); unset: ' +
      'every token is of the default account (`POST /webhooks`)',
  }),
};

const backend = {
  BACKEND: oneOf(['memory', 'rest'], {
    default: 'memory',
    doc: '`memory`: embedded demo data, to try the gateway; `rest`: the real service at `UPSTREAM_URL`, for any real deployment',
  }),
  PRODUCTS_FLAT: text({
    default: 'flat',
    emptyIsValue: true,
    doc:
      "value of the upstream's `products` query parameter for the flat view; change it only when your service names that view " +
      'otherwise; empty sends no parameter (a service that answers flat by default)',
  }),
  PRODUCTS_PLANOGRAM: text({
    default: 'planogram',
    doc:
      "value of the upstream's `products` query parameter for the planogram view; change it only when your service names that view " +
      'otherwise',
  }),
  DEFAULT_CURRENCY: text({
    default: 'EUR',
    pattern: /^[A-Za-z]{3}$/,
    accepts: 'an ISO 4217 currency code (three letters)',
    doc:
      'the currency of a transaction when the service names none: the contract shows no currency on a transaction, so the gateway ' +
      "takes the transaction's own `currencyCode` (or `currency`) field when the service sends one, else the `currencyCode` of the " +
      'vending its `vendingId` names, else this; amounts of different currencies are never added (`transactionStats.byCurrency`); set ' +
      'it to the currency of a fleet that sells in one',
  }),
  SIMULATOR: oneOf(['auto', 'on', 'off'], {
    default: inProduction('off', 'auto'),
    doc:
      "memory backend's demo simulator (a random demo transaction changes status every 3 s): `auto` runs it while a dashboard page is " +
      'open, `on` always (a demo screen with no dashboard page), `off` never (demo data that stays put)',
  }),
};

const upstream = {
  UPSTREAM_URL: httpUrl({ doc: 'base address of the REST service; set it with `BACKEND=rest`' }),
  UPSTREAM_API_KEY: text({
    secret: true,
    doc:
      'key the gateway sends upstream, as the whole `Authorization` value (add `Bearer ` yourself if the service wants it); set it ' +
      'when the gateway has a key of its own at the service and clients use the gateway\'s keys. Unset ("forward mode"): each ' +
      "client's own key is forwarded as the whole `Authorization` value (a client's `Bearer ` prefix is optional and not " +
      'forwarded) and a key counts only once the service accepts it',
  }),
  VENDING_POLL_MS: integer({
    min: SECOND,
    max: HOUR,
    offAt0: true,
    default: 10 * SECOND,
    doc:
      "how often the gateway reads `GET /vendings` with `UPSTREAM_API_KEY` to publish a machine's change of `status`, `online`, " +
      '`enabled` or products on `vendingUpdated` (the service sends no webhook for vendings); one instance polls for all that share a ' +
      'Redis; lower it for fresher machine states, raise it to ask the service less (each read is the whole fleet, so not more than ' +
      'once a second); `0` turns it off (it is off in forward mode, where the gateway has no key of its own)',
  }),
  UPSTREAM_TIMEOUT_MS: integer({
    min: 1,
    max: 600 * SECOND,
    default: 10 * SECOND,
    doc:
      'deadline of a whole upstream call: the wait for a free connection, every attempt (a GET is retried twice after a reset ' +
      'connection or a 502/503/504), retry delay and body byte; past it: `UPSTREAM_TIMEOUT` (REST 504), counted as a failure by the ' +
      'circuit breaker; raise it when the service legitimately takes longer, lower it to fail sooner',
  }),
  UPSTREAM_MAX_CONCURRENT: integer({
    min: 1,
    max: 100_000,
    default: 100,
    doc:
      'most upstream requests under way at once, over keep-alive connections numbering half of it (those past them wait for a ' +
      'connection); ten times as many more wait for a slot, and past that a call fails at once with `UPSTREAM_UNAVAILABLE`; lower it ' +
      'to protect a small service or to stay within the connections its load balancer allows one client, raise it when calls queue ' +
      'while the service has room',
  }),
  UPSTREAM_CALLS_PER_REQUEST: integer({
    min: 1,
    max: 1_000_000,
    default: 500,
    doc:
      'most upstream calls one request (or one WebSocket operation) may start; the fields past it fail with `BAD_USER_INPUT` ' +
      '(`extensions.limit`) and start none; reads shared with another request or served from the cache count nothing; lower it so that ' +
      'no single request costs the service much, raise it when clients legitimately read more ids at once',
  }),
};

const events = {
  WEBHOOK_SECRET: list({
    secret: true,
    item: {
      problem: problemOf(parseSecretEntry),
      accepts:
        'comma-separated Standard Webhooks secrets (whsec_ followed by base64), each alone or as account=secret (an account name of ' +
        'letters, digits, ".", "_" and "-", at most 64 characters)',
    },
    doc:
      'Standard Webhooks secret(s) the service signs webhooks with, comma-separated while one is rotated out (old and new both); when ' +
      'set, unsigned or badly signed webhooks get 401; when unset, webhooks are accepted unsigned (a warning at start). A secret alone ' +
      "checks `/webhooks`, and `/webhooks/{account}` for every account without secrets of its own; `account=whsec_…` is that account's " +
      'own (its path is then checked with its own secrets only), for accounts of the service that sign their webhooks with secrets of ' +
      'their own. An `account=` entry does not stand for a secret alone in production',
  }),
  WEBHOOK_UNSIGNED: oneOf(['allow', 'refuse'], {
    default: inProduction('refuse', 'allow'),
    doc:
      'without a secret alone in `WEBHOOK_SECRET`: `allow` takes unsigned webhooks on `/webhooks` (and on the paths of accounts ' +
      'without secrets of their own), `refuse` stops the gateway from starting; `allow` in production only where nobody but the ' +
      'service can reach those paths; no effect when `WEBHOOK_SECRET` holds a secret alone',
  }),
  REDIS_URL: redisUrl({
    doc:
      'set it when more than one instance runs and they share one Redis server: events, webhook dedupe, the replay log and rate limits ' +
      'are shared by every instance through it (each instance keeps its own history, fed from the shared log, unless `DATABASE_URL` is ' +
      'set) (a command unanswered for 1 s counts Redis as away: webhooks get 503, rate limits fail open, readiness says 503); set at ' +
      'most one of `REDIS_URL`, `REDIS_CLUSTER_NODES`, `REDIS_SENTINELS`',
  }),
  REDIS_CLUSTER_NODES: list({
    secret: true,
    item: {
      problem: problemOf(parseRedisNode),
      accepts: 'comma-separated cluster nodes, each host:port or redis://[user:password@]host:port (rediss:// for TLS)',
    },
    together: nodesProblem,
    doc:
      'instead of `REDIS_URL`, for a Redis Cluster: a few of its nodes (any, masters or replicas), from which the gateway learns the ' +
      'rest and follows failovers; credentials and TLS as `redis://user:password@host:port` or `rediss://…` in any entry (every node ' +
      'gets them)',
  }),
  REDIS_SENTINELS: list({
    secret: true,
    item: {
      problem: problemOf(parseRedisNode),
      accepts: 'comma-separated Sentinels, each host:port or redis://[user:password@]host:port (rediss:// for TLS)',
    },
    together: nodesProblem,
    doc:
      "instead of `REDIS_URL`, for a Redis kept by Sentinel: the Sentinels' addresses; the gateway asks them for the master and " +
      "follows its failovers (never writing to a node that is no longer the master); the Sentinels' own password as " +
      '`redis://:password@host:port` in any entry',
  }),
  REDIS_SENTINEL_MASTER: text({
    secret: true,
    accepts: "the master's name (as the Sentinels know it), alone or as redis://[user:password@]name (rediss:// for TLS)",
    problem: (value) => {
      const master = parseSentinelMaster(value);
      return typeof master === 'string' ? master : undefined;
    },
    doc:
      "the name the Sentinels know the master by (`mymaster`); the data nodes' credentials and TLS as `redis://user:password@mymaster` " +
      '(`rediss://` for TLS)',
  }),
  REDIS_PREFIX: text({
    default: 'vending-gateway:',
    problem: prefixProblem,
    doc:
      'prefix of every Redis key; the instances of one deployment share it; give each deployment its own when several share one Redis; ' +
      "a `{tag}` in it puts every key in one cluster slot (without one, the event log's keys share the slot of `{events}` and " +
      'rate-limit keys spread)',
  }),
  EVENT_LOG_SIZE: integer({
    min: 1,
    max: 1_000_000,
    default: 50_000,
    doc:
      'most events kept for resuming subscribers (`after`, `Last-Event-ID`), and so most a resume replays: below it the log keeps ' +
      'every event of the last 15 minutes and the newest 1,000 whatever their age; a client away longer than what the log reaches gets ' +
      '`EVENTS_EXPIRED`. Size it as your peak webhooks per second × 900 (the default covers 15 minutes at 55 a second); it bounds ' +
      'memory: at most this many events (each about its webhook body twice: body and parsed fields) in Redis with `REDIS_URL`, else in ' +
      'process, where at most 64 MiB of events (their JSON) per thousand of this size, 256 MiB in all, are kept, the oldest going first',
  }),
};

const DAY = 24 * HOUR;

const history = {
  HISTORY: onOff({
    default: true,
    doc:
      'the transaction history (`recentTransactions`, `transactionStats`, `Transaction.history`), fed by every distinct webhook event ' +
      'and payment update; in process, or in PostgreSQL with `DATABASE_URL`; turn it `off` when no client uses those fields, to save ' +
      'the memory they take (they then answer `BAD_USER_INPUT`)',
  }),
  DATABASE_URL: postgresUrl({
    doc:
      "set it when the history must be shared by every instance, survive restarts or hold more than memory allows (an operator's " +
      'week): the history then lives in this PostgreSQL database (migrations run at start, or by `npm run migrate`), whatever ' +
      '`REDIS_URL` says; unset: each instance keeps its own in process',
  }),
  HISTORY_MAX_TRANSACTIONS: integer({
    min: 1,
    max: 10_000_000,
    default: 100_000,
    doc:
      "most transactions the in-process history keeps per account (each account's history is bounded on its own, so the memory it " +
      "takes grows with the accounts that send webhooks; PostgreSQL is bounded by `HISTORY_RETENTION` only); past it the account's " +
      'least recently updated go first; raise it when more transactions of an account change within `HISTORY_RETENTION` (and there is ' +
      'memory for them), lower it to bound memory',
  }),
  HISTORY_RETENTION: duration({
    min: 60 * SECOND,
    max: 366 * DAY,
    default: 7 * DAY,
    doc:
      'a transaction the gateway has seen no change of for this long leaves the history (counted from when the gateway received its ' +
      "latest change, not from the events' own timestamps), and so do statistics nothing changed for this long; set it to the longest " +
      'period your dashboards look back',
  }),
  HISTORY_SOLD_STATUSES: list({
    doc:
      'statuses whose transactions count as sold in `transactionStats` (`totalSold`, top products), comma-separated; set it to the ' +
      'statuses your service gives a completed sale; unset: every status (the contract does not list them)',
  }),
};

/** Said once for the limits below, each refused with an error naming it. */
const raiseWhen = 'raise it only when a legitimate operation of your clients is refused for it';

const graphql = {
  MAX_DEPTH: integer({ min: 1, max: 1_000, default: 10, doc: `deepest selection in one operation (GraphQL Armor); ${raiseWhen}` }),
  MAX_COST: integer({
    min: 1,
    max: 10_000_000,
    default: 5_000,
    doc:
      `highest cost of one operation, in GraphQL Armor's units (a leaf 1, an object 2, ×1.5 per level), where a list argument ` +
      `multiplies its field's cost by its length, variables included; ${raiseWhen}, lower it to refuse expensive operations sooner`,
  }),
  INTROSPECTION: onOff({
    default: inProduction(false, true),
    doc:
      'whether the schema may be introspected, and errors carry "Did you mean …?" hints (fields, arguments, types, enum values, input ' +
      'fields; in documents and in variables), which tell as much of it; on in production only where the schema is no secret (a public ' +
      'API, a staging instance)',
  }),
  GRAPHIQL: onOff({
    default: inProduction(false, true),
    doc:
      'whether a browser opening `/graphql` gets GraphiQL, served from the gateway itself (nothing loaded from the internet; strict ' +
      'Content-Security-Policy); on in production for a staging instance people explore; never with `TRUSTED_DOCUMENTS=only`; with ' +
      '`INTROSPECTION=off` it runs what is typed but cannot complete or document it',
  }),
  TRUSTED_DOCUMENTS: oneOf(['any', 'only'], {
    default: 'any',
    doc:
      '`only`: accept just the operations of `schema/operations/`, by hash; for a deployment whose every client is built from those ' +
      'operations, so no other query can be run',
  }),
};

const websocket = {};

const fastPaths = {
  CACHE_TTL_MS: integer({
    min: 0,
    max: HOUR,
    default: 0,
    doc:
      'serve transactions and vendings, and whole GraphQL results, from a per-key cache for this long (`0` is off); webhooks and ' +
      'payment updates drop what holds a transaction; set it (a few seconds) when many clients read the same data and that much ' +
      'staleness of vendings is acceptable',
  }),
};

const mcp = {
  MCP: oneOf(['off', 'read', 'read+pay'], {
    default: 'off',
    doc:
      "`read`: the dashboard's read operations (`schema/operations/`) as tools for AI assistants at `/mcp` (Model Context Protocol, " +
      "streamable HTTP; docs/mcp.md), each run as a GraphQL operation of the caller's key or token; `read+pay`: the payment tool " +
      'too, which only a key with `pay` may call; `off`: `/mcp` answers 404',
  }),
  MCP_ALLOWED_HOSTS: list({
    item: { pattern: /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)$/, accepts: 'comma-separated host names (no scheme, no port)' },
    doc:
      'the names clients reach `/mcp` by, besides `localhost`, `127.0.0.1`, `[::1]` and `HOST`: a request whose `Host` (or ' +
      '`Origin`) names another is refused with 403 (DNS rebinding); list your public host name when the gateway is behind a load ' +
      'balancer',
  }),
};

// The standard OpenTelemetry names (opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables/),
// read here like every other variable: the SDK is handed values, it reads no environment itself.
const tracing = {
  OTEL_EXPORTER_OTLP_ENDPOINT: httpUrl({
    doc:
      'set it to an OTLP/HTTP collector to trace requests (traces go to `<address>/v1/traces`, as JSON, in batches every 5 s); unset ' +
      '(or empty), tracing is off and costs nothing',
  }),
  OTEL_EXPORTER_OTLP_HEADERS: text({
    secret: true,
    doc:
      'headers sent with every export, `name=value` pairs separated by commas (values percent-encoded); set it when your collector ' +
      'wants an API key',
  }),
  OTEL_SERVICE_NAME: text({
    default: 'vending-gateway',
    doc: '`service.name` of the exported spans; change it to tell deployments apart in your tracing backend',
  }),
  OTEL_TRACES_SAMPLER: oneOf(
    ['always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'],
    {
      default: 'parentbased_always_on',
      doc:
        "which traces are kept, as the OpenTelemetry SDK reads it: `parentbased_*` follows an incoming `traceparent`'s sampled flag, " +
        '`*traceidratio` keeps `OTEL_TRACES_SAMPLER_ARG` of the traces it starts; choose `parentbased_traceidratio` when keeping every ' +
        'trace costs too much',
    },
  ),
  OTEL_TRACES_SAMPLER_ARG: ratio({ default: 1, doc: 'the ratio of the `traceidratio` samplers, e.g. `0.1` to keep one trace in ten' }),
};

/**
 * Variables the gateway read once and reads no more, each with what holds
 * instead: one still set is said at start (a warning naming it), never
 * silently ignored.
 */
export const retired: Record<string, string> = {
  MAX_ALIASES: 'the aliases of one operation are bounded at 50, and each costs its share of MAX_COST',
  MAX_TOKENS: 'the tokens of one document are bounded at 5000 (MAX_COST and MAX_BODY_BYTES bound what a document asks)',
  MAX_DIRECTIVES: 'the directives of one operation are bounded at 50',
  FORWARD_KEY_TTL_MS: "forward mode remembers the service's verdicts on a key for 30 s, and checks keys with open subscriptions that often",
  UPSTREAM_BREAKER: 'the circuit breaker in front of the service is always on',
  WS_MAX_SUBSCRIPTIONS: 'one WebSocket connection holds at most 100 subscriptions',
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'traces go to `<OTEL_EXPORTER_OTLP_ENDPOINT>/v1/traces`: set that variable to the collector',
};

/** The settings by section, in the order the docs list them. */
export const sections = {
  Server: server,
  Clients: clients,
  'Tokens (JWT)': tokens,
  Backend: backend,
  'REST upstream (`BACKEND=rest`)': upstream,
  'Webhooks and events': events,
  'Transaction history': history,
  'GraphQL limits': graphql,
  'WebSocket limits (per connection)': websocket,
  'Fast paths': fastPaths,
  'MCP (AI assistants)': mcp,
  'Tracing (OpenTelemetry)': tracing,
} satisfies Record<string, Record<string, AnySetting>>;

export const spec = {
  ...server,
  ...clients,
  ...tokens,
  ...backend,
  ...upstream,
  ...events,
  ...history,
  ...graphql,
  ...websocket,
  ...fastPaths,
  ...mcp,
  ...tracing,
};

export type Spec = typeof spec;
export type VariableName = keyof Spec;
/** The value of every variable once read, its default applied. */
export type Values = { [Name in VariableName]: Spec[Name] extends Setting<infer V> ? V : never };
