import { comparePositions, eventsExpired, isPosition, type EventLog, type LogKeep, type LoggedEvent, type ReplayPage } from '../events/event-log.js';
import type { TransactionUpdateEvent } from '../events/normalize.js';
import { createRecentEvents, DEDUPE_TTL_MS, type RecentEventsOptions } from '../events/recent-events.js';
import { transactionDigest } from '../events/transaction-digest.js';
import type { Result } from 'ioredis';
import type { RedisClients } from './redis-clients.js';

/*
 * The event log shared by every instance through Redis. One script decides
 * whether a webhook is new, appends it to a capped stream (the replay log,
 * whose ids are the positions) and publishes it on a channel, atomically.
 * Live delivery comes from the channel, so it does not depend on how many
 * entries the stream keeps; the stream fills the gap after a reconnection
 * and serves `after` / Last-Event-ID.
 */

export interface RedisEventLogOptions extends RecentEventsOptions {
  /** Key prefix shared by the instances of one deployment. */
  prefix: string;
  /** Most events kept for replay (the stream is trimmed to exactly this many). */
  capacity: number;
  /** What is kept below `capacity` (older entries are trimmed by id, stream ids being times). @default everything */
  keep?: LogKeep;
  /** Most entries one read of the stream returns. */
  pageEvents: number;
  /** How long an event id can be looked up for `after`. @default 86400 (s) */
  positionTtlSeconds?: number;
  /** Told when the live feed is interrupted (Redis away); it resumes by itself. */
  onTailError?: (error: unknown) => void;
  /**
   * The key of the history's queue (a stream, uncapped): the append script adds every event it
   * admits to it, in the same step, so an event is never admitted without being queued for a history
   * kept elsewhere (PostgreSQL), whichever instance received it and whatever becomes of that instance.
   */
  historyQueue?: string;
}

/*
 * KEYS: stream, event id → position, event id claim, transaction → digest of its last event
 *       (those three of the event's account), the history's queue (written only by the
 *       script made with QUEUE_FOR_HISTORY).
 * ARGV: capacity, event JSON, position TTL (s), dedupe TTL (ms), digest, 'id' | 'content',
 *       the digest this instance remembers for the transaction ('' when none: used only when
 *       Redis has none, e.g. after it restarted empty), channel, span kept (ms), least entries kept.
 * Trimming: exactly `capacity` at most (MAXLEN), then entries older than the span beyond the
 * least kept (MINID, by whole stream nodes (`~`), LIMIT never taking the stream below the least).
 */
const APPEND_BODY = `
if ARGV[6] == 'id' then
  if not redis.call('SET', KEYS[3], '1', 'PX', ARGV[4], 'NX') then return false end
elseif (redis.call('GET', KEYS[4]) or ARGV[7]) == ARGV[5] then
  return false
end
redis.call('SET', KEYS[4], ARGV[5], 'PX', ARGV[4])
local id = redis.call('XADD', KEYS[1], 'MAXLEN', ARGV[1], '*', 'event', ARGV[2])
local beyond = redis.call('XLEN', KEYS[1]) - tonumber(ARGV[10])
if beyond > 0 then
  local oldest = math.max(0, tonumber(string.match(id, '^%d+')) - tonumber(ARGV[9]))
  redis.call('XTRIM', KEYS[1], 'MINID', '~', string.format('%d', oldest), 'LIMIT', beyond)
end
redis.call('SET', KEYS[2], id, 'EX', ARGV[3])
redis.call('PUBLISH', ARGV[8], id .. ' ' .. ARGV[2])`;
const QUEUE_FOR_HISTORY = `redis.call('XADD', KEYS[5], '*', 'event', ARGV[2])`;
const appendScript = (queue: boolean) => `${APPEND_BODY}${queue ? `\n${QUEUE_FOR_HISTORY}` : ''}\nreturn id`;

// The append script, registered on the command connection by name (ioredis `defineCommand`):
// ioredis sends it whole once per connection, then by its SHA1, and whole again should Redis
// answer NOSCRIPT (its script cache emptied), which means nothing ran.
declare module 'ioredis' {
  interface RedisCommander<Context> {
    /** KEYS and ARGV as APPEND_BODY says. */
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

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export function createRedisEventLog(clients: RedisClients, options: RedisEventLogOptions): EventLog {
  const { commands, tail } = clients;
  const stream = `${options.prefix}events`;
  const channel = `${options.prefix}events:live`;
  /**
   * The key of an event id or a transaction: `<prefix><kind>:<id>` for the
   * default account (the keys a deployment had before accounts, kept), and
   * `<prefix><kind>@<account>:<id>` for another; no account name holds ":",
   * so no account's key can be another's.
   */
  const key = (kind: string, id: string, account: string | undefined) =>
    account ? `${options.prefix}${kind}@${account}:${id}` : `${options.prefix}${kind}:${id}`;
  const dedupeTtlMs = options.dedupeTtlMs ?? DEDUPE_TTL_MS;
  const positionTtl = options.positionTtlSeconds ?? 86_400;
  const recent = createRecentEvents(options);
  commands.defineCommand('vendingGatewayAppendEvent', { numberOfKeys: 5, lua: appendScript(options.historyQueue !== undefined) });
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
  const range = async (from: string, count: number) => ((await commands.xrange(stream, from, '+', 'COUNT', count)) as StreamEntries);

  function deliver(logged: LoggedEvent | undefined): void {
    if (!logged || (delivered !== undefined && comparePositions(logged.position, delivered) <= 0)) return;
    delivered = logged.position;
    recent.note(logged.event);
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
        for (let from = delivered; ; ) {
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
    const events = entries.slice(1).map(fromEntry).filter((logged): logged is LoggedEvent => logged !== undefined);
    return { events, next: entries.length > pageEvents ? entries.at(-1)?.[0] : undefined };
  }

  return {
    async append(event, dedupeBy) {
      if (dedupeBy === 'id' && recent.hasId(event)) return undefined;
      const digest = transactionDigest(event.transaction);
      const { account } = event;
      const keys = [stream, key('event-position', event.eventId, account), key('dedupe', event.eventId, account), key('last-digest', event.transactionId, account), options.historyQueue ?? `${options.prefix}history-queue`];
      const args = [options.capacity, JSON.stringify(event), positionTtl, dedupeTtlMs, digest, dedupeBy, recent.lastDigest(event) ?? '', channel, keep.spanMs, keep.leastEvents];
      const position = await commands.vendingGatewayAppendEvent(...keys, ...args);
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
      const position = cursor.length <= MAX_CURSOR_LENGTH ? await commands.get(key('event-position', cursor, account)) : null;
      const replay = await after(position);
      if (!replay) throw eventsExpired(cursor, await newest());
      return replay;
    },
    onAppend(listener) {
      listeners.add(listener);
      return () => void listeners.delete(listener);
    },
    ready: () => commands.status === 'ready',
    whenLive: () => live,
    async close() {
      closed = true;
      tail.off('ready', onReady);
      listeners.clear();
    },
  };
}
