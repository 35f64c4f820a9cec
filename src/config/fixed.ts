/*
 * Values the gateway does not read from the environment: each is a choice
 * no operator has a reason to revisit, or follows from a variable of spec.ts
 * (config.ts derives those). Written here once; config.ts puts each in the
 * Config field the code reads, so a test or a benchmark that needs another
 * value overrides that field, never an environment variable.
 */

const SECOND = 1_000;
const KIB = 1_024;
const MIB = 1_024 * KIB;

export const fixed = {
  /**
   * Longest a client may take to send a whole request. The default body limit
   * (1 MiB) arrives in time at 35 KiB/s, slower than any link a dashboard is
   * used on, while a client that trickles a body cannot hold a connection for
   * minutes (Node's own default is 5 minutes).
   */
  requestTimeoutMs: 30 * SECOND,
  /**
   * Longest a client may take to send a request's headers (a WebSocket upgrade
   * too). Headers are a few KiB, sent at once by every real client; only a
   * slowloris takes longer. At most `requestTimeoutMs`.
   */
  headersTimeoutMs: 10 * SECOND,
  /**
   * Longest a graceful shutdown waits for work in flight before closing what
   * is left: as long as one upstream call may take by default
   * (UPSTREAM_TIMEOUT_MS), and with SHUTDOWN_GRACE_MS up to 20 s it fits in the
   * 30 s an orchestrator (Kubernetes' terminationGracePeriodSeconds) waits by
   * default before it kills the process.
   */
  shutdownTimeoutMs: 10 * SECOND,
  /**
   * Clock difference tolerated when judging a token's `exp` and `nbf`: hosts
   * kept by NTP differ by far less, and an expired token is accepted at most
   * this much longer.
   */
  jwtClockSkewS: 30,
  /**
   * GraphQL Armor's bounds on one document besides its depth and cost
   * (MAX_DEPTH, MAX_COST): no dashboard operation comes near them, and what
   * an operation costs is bounded by MAX_COST whatever these allow. Tokens
   * also bound the parser's work before cost is known (its recursion grows
   * with nesting).
   */
  graphqlLimits: { maxAliases: 50, maxTokens: 5_000, maxDirectives: 50 },
  /** The demo simulator changes a transaction this often: visible on a dashboard, never a flood. */
  simulatorIntervalMs: 3 * SECOND,
  /**
   * A batch of this many vending ids or more is read with one `GET /vendings`
   * (every machine, one call) instead of one call each: from three on the list
   * call costs the upstream less than the single reads.
   */
  vendingListThreshold: 3,
  /**
   * Most transaction reads in flight for one batch (`transactions(ids:)`):
   * one large query takes a sixth of the upstream slots
   * (UPSTREAM_MAX_CONCURRENT, 100 by default), never all of them.
   */
  transactionConcurrency: 16,
  /**
   * The circuit breaker opens when more than half of at least 20 calls in
   * 10 s failed: an upstream in trouble, not a few bad requests on a quiet
   * gateway; it stays open 10 s (the length of one upstream deadline) before
   * one probe call.
   */
  breaker: { failureThresholdPercent: 50, minimumCalls: 20, windowMs: 10 * SECOND, resetTimeoutMs: 10 * SECOND },
  /**
   * A GET is tried again twice (after 50 ms, then 100 ms, plus jitter) after a
   * reset connection or a 502/503/504, all within UPSTREAM_TIMEOUT_MS: enough
   * for a restarting upstream instance behind a balancer; more would only
   * load an upstream that is down. A PUT is never retried.
   */
  upstreamRetries: 2,
  /**
   * Upstream calls waiting for a slot, per slot of UPSTREAM_MAX_CONCURRENT:
   * ten waits for a slot are short at the upstream's normal pace; past that
   * the upstream is not keeping up and a call fails at once (UPSTREAM_UNAVAILABLE).
   */
  upstreamQueuedPerSlot: 10,
  /**
   * Forward mode: most key checks started with the service in any second.
   * Real clients bring a new key now and then; a flood of made-up keys is
   * refused (RATE_LIMITED) rather than passed on to the service.
   */
  forwardKeyChecksPerSecond: 20,
  /**
   * Subscriptions one WebSocket connection may hold: a dashboard watches a few
   * (the feed, a machine, a transaction or two); a connection that opens more
   * is a bug or an attack, and each costs the gateway memory and a bus slot.
   */
  wsMaxSubscriptions: 100,
  /**
   * Forward mode: how long the service's verdicts on a key (accepted, which
   * accounts it may read) are remembered, and how often a key with open
   * subscriptions is checked again: a revoked key loses its live feed within
   * this, and a busy dashboard's key costs the service one check this often.
   */
  forwardKeyTtlMs: 30 * SECOND,
  /**
   * Longest wait for a Redis answer, and how often an idle connection is asked
   * whether Redis still answers: a Redis on the same network answers in
   * milliseconds, so silence this long means it is away, and a webhook
   * sender gets its 503 long before its own timeout. Counted as Redis's
   * silence, never as the event loop's lateness (src/redis/command-deadline.ts).
   */
  redisCommandTimeoutMs: SECOND,
  /**
   * Longest wait for a replica to hold an appended event (WAIT), when the
   * master has replicas; past it the webhook gets 503 and its sender retries.
   * Half of `redisCommandTimeoutMs`: a replica on the same network answers in
   * milliseconds, and the WAIT's own answer comes before the command would be
   * given up, so the 503 says why.
   */
  redisReplicaWaitMs: SECOND / 2,
  /**
   * Without Redis, the in-process event log keeps at most 64 MiB of events
   * (their JSON) per thousand of EVENT_LOG_SIZE, about 64 KiB an event, and
   * never more than `eventLogMostBytes`: room for ordinary events, while a
   * count alone let large webhooks fill the process (a thousand of 700 KB
   * took one to 2 GB).
   */
  eventLogBytesPerThousand: 64 * MIB,
  eventLogMostBytes: 256 * MIB,
  /**
   * What the event log keeps below its ceiling (EVENT_LOG_SIZE): every event
   * of the last 15 minutes (a client away that long, a deploy, a network
   * outage, resumes without reloading), and the newest 1,000 whatever their
   * age, so a quiet deployment reaches as far back as a count alone did.
   * Events older than both go: memory follows the traffic of the span.
   */
  eventLogKeep: { spanMs: 15 * 60 * SECOND, leastEvents: 1_000 },
  /**
   * A resume reads the log in pages of 200 events: one Redis command of well
   * under a millisecond at any log size (one unbounded read of 300,000 took
   * Redis a second, every instance waiting behind it). At most 8 pages are
   * read at once per instance, the next page of a replay once its subscriber
   * took the last one, so hundreds resuming together share the event loop
   * with everything else (probes, webhooks) instead of filling it.
   */
  replay: { pageEvents: 200, pagesAtOnce: 8 },
  /** Time a WebSocket client has to send `connection_init` (graphql-ws's own default): clients send it as soon as the socket opens. */
  wsInitTimeoutMs: 3 * SECOND,
  /**
   * WebSocket ping interval; a peer that does not answer one is dropped.
   * Shorter than the idle timeout of common load balancers and proxies
   * (60 s), so an idle subscription is never cut by them.
   */
  wsKeepAliveMs: 12 * SECOND,
  /**
   * Largest WebSocket message, at most MAX_BODY_BYTES: one message is one
   * operation, which GraphQL's limits (graphqlLimits.maxTokens) keep far smaller.
   */
  wsMaxMessageBytes: 64 * KIB,
  /**
   * Bytes of results a WebSocket connection or an SSE stream may hold unsent:
   * `bodies` times MAX_BODY_BYTES, a few of the largest events (a webhook is
   * at most MAX_BODY_BYTES), and never under `leastBytes`, which holds any
   * read result; a client that reads too slowly is cut past it (it reconnects
   * and resumes).
   */
  unsent: { bodies: 4, leastBytes: 64 * KIB },
  /** Longest a finished span waits before it is exported in a batch: the OpenTelemetry SDK's own default. */
  traceExportDelayMs: 5 * SECOND,
  /**
   * The PostgreSQL history (DATABASE_URL). `sweepMs`: how often what is past
   * HISTORY_RETENTION is deleted: retention is counted in days, a minute late
   * is nothing, and reads skip what waits for the sweep. `retryMs`: after a
   * failed commit, how long webhooks are refused without a try (without
   * Redis), and how long the Redis queue's reader and migrations wait before
   * they try again. `maxQueued`: webhooks waiting for their commit (without
   * Redis), or events the shared log keeps that the history has not applied
   * yet (with Redis), about an hour of an operator's webhooks (10,000
   * machines, a million a day) at a few hundred bytes each.
   * `claimIdleMs` (with Redis): how long an event an instance read from the
   * history's queue may stay unapplied before another instance takes it
   * over: far longer than an apply takes (milliseconds; a statement is cut
   * at a few seconds), short enough that a crashed instance's events are in
   * the history within a minute.
   */
  postgresHistory: { sweepMs: 60 * SECOND, retryMs: SECOND, maxQueued: 50_000, claimIdleMs: 30 * SECOND },
  /**
   * How long a subscription token (POST /subscription-tokens) may wait for
   * the one SSE stream it starts. It travels in a URL, where proxies and
   * browser history may keep it: it is good once and briefly, while a page
   * fetches one and opens its EventSource at once (milliseconds), with room
   * for a slow link and a clock that is not the server's.
   */
  subscriptionTokenTtlMs: 60 * SECOND,
  /**
   * MCP sessions (`/mcp`) open at once on one instance, and per identity (an
   * assistant holds one or a few; a key that opens more closes its own
   * oldest, not others'), and how long one may go unused. A session holds no
   * connection (answers are whole JSON), only a few KiB; an assistant's client
   * that goes quiet for half an hour initializes again on the 404 it then
   * gets, as the MCP spec asks clients to.
   */
  mcpSessions: { max: 1_000, perOwner: 50, idleMs: 30 * 60 * SECOND },
};
