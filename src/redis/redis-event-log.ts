import { setTimeout as sleep } from 'node:timers/promises';
import { comparePositions, isPosition, type EventLog, type LogKeep, type LoggedEvent, type ReplayPage } from '../events/event-log.js';
import type { TransactionUpdateEvent } from '../events/normalize.js';
import { refuseOperation } from '../refusals/operation-refusals.js';
import { createRecentEvents, DEDUPE_TTL_MS, type RecentEventsOptions } from '../events/recent-events.js';
import { transactionDigest } from '../events/transaction-digest.js';
import type { Result } from 'ioredis';
import type { RedisClients } from './redis-clients.js';
import { createReplicaWait } from './replica-wait.js';
import { redisKeys } from './redis-keys.js';

/*
 * The event log shared by every instance through Redis. One script decides
 * whether a webhook is new, appends it to a capped stream (the replay log,
 * whose ids are the positions) and publishes it on a channel, atomically.
 * Live delivery comes from the channel, so it does not depend on how many
 * entries the stream keeps; the stream fills the gap after a reconnection
 * and serves `after` / Last-Event-ID.
 */

export interface RedisEventLogOptions extends RecentEventsOptions {
  /** Key prefix shared by the instances of one deployment (redis-keys.ts names the keys under it). */
  prefix: string;
  /** Most events kept for replay (the stream is trimmed to this many, never past what `historyGroup` has not acknowledged). */
  capacity: number;
  /** What is kept below `capacity` (older entries are trimmed by id, stream ids being times). @default everything */
  keep?: LogKeep;
  /** Most entries one read of the stream returns. */
  pageEvents: number;
  /** Told when the live feed is interrupted (Redis away); it resumes by itself. */
  onTailError?: (error: unknown) => void;
  /**
   * The consumer group through which a history kept elsewhere (PostgreSQL)
   * reads this log's stream itself (redis-history-reader.ts): each event is
   * stored once, and trimming never passes an entry the group has not
   * acknowledged, so an admitted event waits in the log for the history
   * whichever instance received it and whatever becomes of that instance.
   */
  historyGroup?: string;
  /**
   * Longest wait for a replica to hold an appended event when the master has replicas (replica-wait.ts; the configuration's
   * `redisReplicaWaitMs`).
   */
  replicaWaitMs: number;
}

/*
 * KEYS: stream, event id → position, event id claim, transaction → digest of its last event,
 *       account → position of its newest event (those four of the event's account).
 * ARGV: capacity, event JSON, longest life of the keys (ms), digest, 'id' | 'content',
 *       the digest this instance remembers for the transaction ('' when none: used only when
 *       Redis has none, e.g. after it restarted empty), channel, the history's group ('' when
 *       none), the shortest life of the keys (ms), span kept (ms), least entries kept.
 *
 * A redelivery is answered after a write that changes nothing (a key's own expiry set
 * again): the replicas reach its replication offset only after whatever wrote that key,
 * so the WAIT that follows confirms the event the redelivery repeats.
 *
 * Trimming, never past an entry the history's group has not acknowledged (pending, or not
 * read yet: with a history its group's reading is what bounds the log):
 *  - the oldest entries past the capacity go, at most TRIM_STEP per append (a log that grew
 *    while the history was behind shrinks back over the appends that follow, never in one
 *    long step);
 *  - then entries older than the span kept, beyond the least kept (MINID by whole stream
 *    nodes (`~`), LIMIT never taking the stream below the least).
 *
 * The per-event keys live as long as the log reaches back (twice the time its oldest
 * entry has been in it, within the shortest and longest life); while the log holds fewer
 * than the least it keeps, nothing has left it yet, so they live the longest life.
 */
const TRIM_STEP = 100;
const APPEND_SCRIPT = `
local stream, capacity, longest, shortest = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[3]), tonumber(ARGV[9])
local function touch(key)
  local at = redis.call('PEXPIRETIME', key)
  if at > 0 then redis.call('PEXPIREAT', key, at) end
end
local function parts(id)
  local ms, seq = string.match(id, '^(%d+)-(%d+)$')
  return tonumber(ms), tonumber(seq)
end
local function before(a, b)
  local am, as = parts(a)
  local bm, bs = parts(b)
  return am < bm or (am == bm and as < bs)
end
-- The first entry the history's group still needs (nil: it needs none, or there is no group yet).
local function needed()
  if ARGV[8] == '' then return nil end
  for _, group in ipairs(redis.call('XINFO', 'GROUPS', stream)) do
    local info = {}
    for i = 1, #group, 2 do info[group[i]] = group[i + 1] end
    if info['name'] == ARGV[8] then
      if tonumber(info['pending']) > 0 then return redis.call('XPENDING', stream, ARGV[8], '-', '+', 1)[1][1] end
      local ms, seq = parts(info['last-delivered-id'])
      return ms .. '-' .. (seq + 1)
    end
  end
  return nil
end
if ARGV[5] == 'id' then
  if redis.call('EXISTS', KEYS[3]) == 1 then touch(KEYS[3]) return false end
else
  local last = redis.call('GET', KEYS[4])
  if (last or ARGV[6]) == ARGV[4] then
    if last then touch(KEYS[4]) end
    return false
  end
end
local id = redis.call('XADD', stream, '*', 'event', ARGV[2])
local floor = false
local function spare(cut)
  if floor == false then floor = needed() end
  if floor and before(floor, cut) then return floor end
  return cut
end
local excess = redis.call('XLEN', stream) - capacity
if excess > 0 then
  local oldest = redis.call('XRANGE', stream, '-', '+', 'COUNT', math.min(excess, ${TRIM_STEP}) + 1)
  redis.call('XTRIM', stream, 'MINID', spare(oldest[#oldest][1]))
end
local beyond = redis.call('XLEN', stream) - tonumber(ARGV[11])
if beyond > 0 then
  local old = string.format('%d', math.max(0, parts(id) - tonumber(ARGV[10]))) .. '-0'
  redis.call('XTRIM', stream, 'MINID', '~', spare(old), 'LIMIT', beyond)
end
local life = longest
if redis.call('XLEN', stream) >= tonumber(ARGV[11]) then
  local first = parts(redis.call('XRANGE', stream, '-', '+', 'COUNT', 1)[1][1])
  life = math.max(shortest, math.min(longest, 2 * (parts(id) - first)))
end
if ARGV[5] == 'id' then redis.call('SET', KEYS[3], '1', 'PX', life) end
redis.call('SET', KEYS[4], ARGV[4], 'PX', life)
redis.call('SET', KEYS[2], id, 'PX', life)
-- The account's cursor outlives its entry: nothing of the account comes after it until its next event.
redis.call('SET', KEYS[5], id, 'PX', longest)
redis.call('PUBLISH', ARGV[7], id .. ' ' .. ARGV[2])
return id`;

/**
 * The shortest life of an event's keys: a sender's prompt retry (Retry-After is seconds) is always caught, however fast the log turns over.
 */
const SHORTEST_KEY_LIFE_MS = 60_000;

// The append script, registered on the appends connection by name (ioredis `defineCommand`):
// ioredis sends it whole once per connection, then by its SHA1, and whole again should Redis
// answer NOSCRIPT (its script cache emptied), which means nothing ran.
declare module 'ioredis' {
  interface RedisCommander<Context> {
    /** KEYS and ARGV as APPEND_SCRIPT says. */
    vendingGatewayAppendEvent(...keysThenArgs: Array<string | number>): Result<string | null, Context>;
  }
}

/** Longest cursor looked up as an event id; anything longer was never one of ours. */
const MAX_CURSOR_LENGTH = 1_024;

type StreamEntries = Array<[id: string, fields: string[]]>;

function fromEntry([id, fields]: [string, string[]]): LoggedEvent | undefined {
  const index = fields.indexOf('event');
  if (index < 0) return undefined;
  return { position: id, event: JSON.parse(fields[index + 1] as string) as TransactionUpdateEvent };
}

function fromMessage(message: string): LoggedEvent {
  const space = message.indexOf(' ');
  return { position: message.slice(0, space), event: JSON.parse(message.slice(space + 1)) as TransactionUpdateEvent };
}

export function createRedisEventLog(clients: RedisClients, options: RedisEventLogOptions): EventLog {
  const { commands, appends, tail } = clients;
  const keys = redisKeys(options.prefix);
  const { stream, channel } = keys;
  const dedupeTtlMs = options.dedupeTtlMs ?? DEDUPE_TTL_MS;
  /** Events this instance appended (or found already there) and a replica confirmed: a redelivery of one is answered without Redis. */
  const confirmed = createRecentEvents(options);
  /** Events handed to listeners: one appended again (its webhook retried after a failover lost it) is not handed twice. */
  const handed = createRecentEvents(options);
  const replicas = createReplicaWait(appends, { boundMs: options.replicaWaitMs });
  appends.defineCommand('vendingGatewayAppendEvent', { numberOfKeys: 5, lua: APPEND_SCRIPT });
  const listeners = new Set<(logged: LoggedEvent) => void>();
  let closed = false;
  /** Position of the last event handed to listeners; undefined until the first connection. */
  let delivered: string | undefined;
  /** Channel messages that arrive while the stream is read after a reconnection. */
  let held: LoggedEvent[] | undefined = [];

  async function newest(): Promise<string> {
    try {
      const info = (await commands.xinfo('STREAM', stream)) as unknown[];
      return String(info[info.indexOf('last-generated-id') + 1]);
    } catch (error) {
      if (String(error).includes('no such key')) return '0-0';
      throw error;
    }
  }

  const { pageEvents } = options;
  const keep = options.keep ?? { spanMs: Number.MAX_SAFE_INTEGER, leastEvents: options.capacity };
  /** At most `count` entries from `from` on: every read of the stream is bounded, so none holds Redis for long. */
  const range = async (from: string, count: number) => (await commands.xrange(stream, from, '+', 'COUNT', count)) as StreamEntries;

  function deliver(logged: LoggedEvent | undefined): void {
    if (!logged || (delivered !== undefined && comparePositions(logged.position, delivered) <= 0)) return;
    delivered = logged.position;
    confirmed.supersede(logged.event);
    if (handed.hasId(logged.event)) return;
    handed.note(logged.event);
    for (const listener of listeners) listener(logged);
  }

  tail.on('message', (from: string, message: string) => {
    if (from !== channel) return;
    const logged = fromMessage(message);
    if (held) held.push(logged);
    else deliver(logged);
  });

  let markLive: () => void = () => {};
  const live = new Promise<void>((resolve) => (markLive = resolve));

  /**
   * On every (re)connection: listen again, then read from the stream whatever
   * went by meanwhile. The first time, "meanwhile" starts at the newest entry
   * read before listening: older entries are for replay, not live.
   */
  async function resync(): Promise<void> {
    held ??= [];
    while (!closed) {
      // The stream is read on the command connection; until it is up there is nothing to report.
      if (commands.status !== 'ready') {
        await sleep(50);
        continue;
      }
      try {
        delivered ??= await newest();
        await tail.subscribe(channel);
        // Page by page up to the newest; an entry trimmed meanwhile was never the listeners' to miss.
        for (let from = delivered; ;) {
          const entries = await range(`(${from}`, pageEvents);
          for (const entry of entries) deliver(fromEntry(entry));
          if (entries.length < pageEvents) break;
          from = entries.at(-1)![0];
        }
        break;
      } catch (error) {
        if (closed) return;
        options.onTailError?.(error);
        await sleep(200);
      }
    }
    for (const logged of held.splice(0)) deliver(logged);
    held = undefined;
    markLive();
  }
  let syncing = Promise.resolve();
  const onReady = () => void (syncing = syncing.then(resync));
  tail.on('ready', onReady);
  if (tail.status === 'ready') onReady();

  /** A page of the stream's entries after the one at `position`, or undefined when the stream no longer holds it. */
  async function after(position: string | null): Promise<ReplayPage | undefined> {
    if (position === null) return undefined;
    const entries = await range(position, pageEvents + 1);
    if (entries[0]?.[0] !== position) return undefined;
    const events = entries
      .slice(1)
      .map(fromEntry)
      .filter((logged): logged is LoggedEvent => logged !== undefined);
    return { events, next: entries.length > pageEvents ? entries.at(-1)?.[0] : undefined };
  }

  return {
    async append(event, dedupeBy) {
      if (dedupeBy === 'id' && confirmed.hasId(event)) return undefined;
      const digest = transactionDigest(event.transaction);
      const { account } = event;
      const scriptKeys = [
        stream,
        keys.eventPosition(event.eventId, account),
        keys.dedupe(event.eventId, account),
        keys.lastDigest(event.transactionId, account),
        keys.accountNewest(account),
      ];
      const args = [
        options.capacity,
        JSON.stringify(event),
        dedupeTtlMs,
        digest,
        dedupeBy,
        confirmed.lastDigest(event) ?? '',
        channel,
        options.historyGroup ?? '',
        SHORTEST_KEY_LIFE_MS,
        keep.spanMs,
        keep.leastEvents,
      ];
      const position = await appends.vendingGatewayAppendEvent(...scriptKeys, ...args);
      // A new event and a redelivery alike: 200 only once a replica holds what the answer stands on.
      await replicas.confirm();
      confirmed.note(event);
      return position === null ? undefined : { position, event };
    },
    async readAfter(cursor, account) {
      // A position first (the ids SSE writes), else an event id.
      if (isPosition(cursor)) {
        const replay = await after(cursor);
        if (replay) return replay;
        // The position of a log that holds nothing yet, or whose entries are all older than it keeps.
        if (cursor === (await newest())) return { events: [], next: undefined };
      }
      const position = cursor.length <= MAX_CURSOR_LENGTH ? await commands.get(keys.eventPosition(cursor, account)) : null;
      const replay = await after(position);
      if (!replay) throw refuseOperation.eventsExpired(cursor, await newest());
      return replay;
    },
    // `0-0`: before every stream id. The key lives as long as the dedupe keys (a day): an account quiet longer is told `0-0`.
    accountCursor: async (account) => (await commands.get(keys.accountNewest(account || undefined))) ?? '0-0',
    onAppend(listener) {
      listeners.add(listener);
      return () => void listeners.delete(listener);
    },
    ready: () => commands.status === 'ready' && appends.status === 'ready',
    whenLive: () => live,
    async close() {
      closed = true;
      tail.off('ready', onReady);
      listeners.clear();
    },
  };
}
