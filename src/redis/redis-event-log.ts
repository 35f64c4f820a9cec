import { comparePositions, eventsExpired, isPosition, type EventLog, type LoggedEvent } from '../events/event-log.js';
import type { TransactionUpdateEvent } from '../events/normalize.js';
import { createRecentEvents, DEDUPE_TTL_MS, type RecentEventsOptions } from '../events/recent-events.js';
import { transactionDigest } from '../events/transaction-digest.js';
import type { Result } from 'ioredis';
import type { RedisClients } from './redis-clients.js';
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
  /** Events kept for replay (the stream is trimmed to exactly this many). */
  capacity: number;
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
 *       Redis has none, e.g. after it restarted empty), channel.
 */
const APPEND_BODY = `
if ARGV[6] == 'id' then
  if not redis.call('SET', KEYS[3], '1', 'PX', ARGV[4], 'NX') then return false end
elseif (redis.call('GET', KEYS[4]) or ARGV[7]) == ARGV[5] then
  return false
end
redis.call('SET', KEYS[4], ARGV[5], 'PX', ARGV[4])
local id = redis.call('XADD', KEYS[1], 'MAXLEN', ARGV[1], '*', 'event', ARGV[2])
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
  const keys = redisKeys(options.prefix);
  const { stream, channel } = keys;
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

  const range = async (from: string) => ((await commands.xrange(stream, from, '+')) as StreamEntries);

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
        for (const entry of await range(`(${delivered}`)) deliver(fromEntry(entry));
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

  /** The stream's entries after the one at `position`, or undefined when the stream no longer holds it. */
  async function after(position: string | null): Promise<LoggedEvent[] | undefined> {
    if (position === null) return undefined;
    const entries = await range(position);
    if (entries[0]?.[0] !== position) return undefined;
    return entries.slice(1).map(fromEntry).filter((logged): logged is LoggedEvent => logged !== undefined);
  }

  return {
    async append(event, dedupeBy) {
      if (dedupeBy === 'id' && recent.hasId(event)) return undefined;
      const digest = transactionDigest(event.transaction);
      const { account } = event;
      const scriptKeys = [stream, keys.eventPosition(event.eventId, account), keys.dedupe(event.eventId, account), keys.lastDigest(event.transactionId, account), options.historyQueue ?? keys.historyQueue];
      const args = [options.capacity, JSON.stringify(event), positionTtl, dedupeTtlMs, digest, dedupeBy, recent.lastDigest(event) ?? '', channel];
      const position = await commands.vendingGatewayAppendEvent(...scriptKeys, ...args);
      return position === null ? undefined : { position, event };
    },
    async readAfter(cursor, account) {
      // A position first (the ids SSE writes), else an event id.
      if (isPosition(cursor)) {
        const replay = await after(cursor);
        if (replay) return replay;
        // The position of a log that holds nothing yet.
        if (cursor === (await newest())) return [];
      }
      const position = cursor.length <= MAX_CURSOR_LENGTH ? await commands.get(keys.eventPosition(cursor, account)) : null;
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
