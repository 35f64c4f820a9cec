import { hashTagOf } from '../config/config.js';

/*
 * Every Redis key and channel of a deployment, named once. A script may touch
 * only keys of one cluster slot, so the event log's keys (its stream, the
 * per-event keys, an earlier version's history queue) carry one hash tag: `{events}` after
 * REDIS_PREFIX, or the prefix's own `{tag}` when it has one (Redis hashes the
 * first tag of a key, so then every key of the deployment is in that slot).
 * Rate-limit keys carry no tag of ours: each identity's count is one key, and
 * they spread over the cluster's shards.
 */

export interface RedisKeys {
  /** The event log's stream (the replay log, whose ids are positions). */
  stream: string;
  /** The channel live events are published on (a channel has no slot: a cluster sends it to every node). */
  channel: string;
  /** Where an earlier version queued events for a history kept in PostgreSQL (applied, then deleted, at start: events.ts). */
  historyQueue: string;
  /** Written by each instance to learn whether it can write the event log's slot now (readiness). */
  writeProbe: string;
  /** An event id → its position in the stream. */
  eventPosition(eventId: string, account: string | undefined): string;
  /** An event id claimed by the instance that admitted it (dedupe by id). */
  dedupe(eventId: string, account: string | undefined): string;
  /** A transaction → the digest of its last event (dedupe by content). */
  lastDigest(transactionId: string, account: string | undefined): string;
  /** An account → the position of its newest event (its cursor: event-log.ts `accountCursor`). */
  accountNewest(account: string | undefined): string;
  /** Start of every rate-limit key (rate-limiter-flexible adds `:<identity>`). */
  rateLimitPrefix: string;
  /** A persisted query's text by its sha256 (APQ: graphql/persisted-queries.ts). */
  persistedQuery(hash: string): string;
  /** The lease of the one instance that reads the machines for `vendingUpdated` (redis-lease.ts). */
  vendingPollLease: string;
  /**
   * The prefix of the machines' own event log (its stream, channel and per-event keys, as the transactions' are named under REDIS_PREFIX).
   */
  vendingLogPrefix: string;
  /** The names the stream and the history's queue had before they were tagged (empty when they had a tag already). */
  untagged:
    | {
        stream: string;
        historyQueue: string;
        eventPosition(eventId: string, account: string | undefined): string;
        dedupe(eventId: string, account: string | undefined): string;
        lastDigest(transactionId: string, account: string | undefined): string;
      }
    | undefined;
}

/**
 * `<base><kind>:<id>` for the default account (the keys a deployment had
 * before accounts, kept), and `<base><kind>@<account>:<id>` for another; no
 * account name holds ":", so no account's key can be another's.
 */
const perEvent = (base: string) => (kind: string) => (id: string, account: string | undefined) =>
  account ? `${base}${kind}@${account}:${id}` : `${base}${kind}:${id}`;

function keysUnder(base: string, streamName: string) {
  const of = perEvent(base);
  return {
    stream: streamName,
    historyQueue: `${base}history-queue`,
    eventPosition: of('event-position'),
    dedupe: of('dedupe'),
    lastDigest: of('last-digest'),
    accountNewest: (account: string | undefined) => of('account-newest')('position', account),
  };
}

export function redisKeys(prefix: string): RedisKeys {
  const tagged = hashTagOf(prefix) !== undefined;
  // `<prefix>{events}` is the stream itself; the other keys of the log follow it: `<prefix>{events}:dedupe:<id>`.
  const log = tagged ? keysUnder(prefix, `${prefix}events`) : keysUnder(`${prefix}{events}:`, `${prefix}{events}`);
  return {
    ...log,
    channel: `${prefix}events:live`,
    writeProbe: tagged ? `${prefix}write-probe` : `${prefix}{events}:write-probe`,
    rateLimitPrefix: `${prefix}rate`,
    persistedQuery: (hash) => `${prefix}apq:${hash}`,
    vendingPollLease: `${prefix}vendings:poll-lease`,
    vendingLogPrefix: `${prefix}vendings:`,
    untagged: tagged ? undefined : keysUnder(prefix, `${prefix}events`),
  };
}
