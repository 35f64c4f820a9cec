import { eventsExpired, type EventLog, type LoggedEvent } from '../event-log.js';
import type { TransactionUpdateEvent } from '../normalize.js';
import type { RedisClients } from '../../redis/redis-clients.js';

/*
 * The event log as a capped Redis stream: every instance appends to it and
 * tails it, so a webhook received by one reaches subscribers on all, and any
 * instance can replay. Stream ids are the positions ("ms-seq", ordered).
 */

export interface RedisEventLogOptions {
  /** Key prefix shared by the instances of one deployment. */
  prefix: string;
  /** Events kept for replay (the stream is trimmed to exactly this many). */
  capacity: number;
  /** How long an event id can be looked up for `after`. @default 86400 (s) */
  positionTtlSeconds?: number;
  /** Told when tailing fails (Redis away); tailing resumes by itself. */
  onTailError?: (error: unknown) => void;
}

// Append and remember where the event went, atomically, so `after` always finds what was published.
const APPEND = `
local id = redis.call('XADD', KEYS[1], 'MAXLEN', ARGV[1], '*', 'event', ARGV[2])
redis.call('SET', KEYS[2], id, 'EX', ARGV[3])
return id`;

type StreamEntries = Array<[id: string, fields: string[]]>;

function parseId(id: string): [number, number] {
  const [ms, seq] = id.split('-');
  return [Number(ms), Number(seq ?? 0)];
}

export function compareStreamIds(a: string, b: string): number {
  const [am, as] = parseId(a);
  const [bm, bs] = parseId(b);
  return am !== bm ? am - bm : as - bs;
}

function toLogged([id, fields]: [string, string[]]): LoggedEvent | undefined {
  const index = fields.indexOf('event');
  if (index < 0) return undefined;
  return { position: id, event: JSON.parse(fields[index + 1] as string) as TransactionUpdateEvent };
}

export function createRedisEventLog(clients: RedisClients, options: RedisEventLogOptions): EventLog {
  const stream = `${options.prefix}events`;
  const positionKey = (eventId: string) => `${options.prefix}event-position:${eventId}`;
  const ttl = options.positionTtlSeconds ?? 86_400;
  const listeners = new Set<(logged: LoggedEvent) => void>();
  let closed = false;

  async function tail(): Promise<void> {
    // Start after whatever is already there: older events are for replay, not live.
    let last = '0-0';
    while (!closed) {
      try {
        if (last === '0-0') {
          const newest = (await clients.tail.xrevrange(stream, '+', '-', 'COUNT', 1)) as StreamEntries;
          last = newest[0]?.[0] ?? '0-1';
        }
        const answer = (await clients.tail.xread('COUNT', 500, 'BLOCK', 1_000, 'STREAMS', stream, last)) as Array<[string, StreamEntries]> | null;
        for (const entry of answer?.[0]?.[1] ?? []) {
          last = entry[0];
          const logged = toLogged(entry);
          if (logged) for (const listener of listeners) listener(logged);
        }
      } catch (error) {
        if (closed) return;
        options.onTailError?.(error);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
  }
  void tail();

  return {
    async append(event) {
      const position = (await clients.commands.eval(APPEND, 2, stream, positionKey(event.eventId), options.capacity, JSON.stringify(event), ttl)) as string;
      return { position, event };
    },
    async readAfter(eventId) {
      const position = await clients.commands.get(positionKey(eventId));
      if (position === null) throw eventsExpired(eventId);
      // Trimming removes the oldest first: if the event itself is gone, so may be some after it.
      const oldest = (await clients.commands.xrange(stream, '-', '+', 'COUNT', 1)) as StreamEntries;
      if (!oldest[0] || compareStreamIds(oldest[0][0], position) > 0) throw eventsExpired(eventId);
      const entries = (await clients.commands.xrange(stream, `(${position}`, '+')) as StreamEntries;
      return entries.map(toLogged).filter((logged): logged is LoggedEvent => logged !== undefined);
    },
    onAppend(listener) {
      listeners.add(listener);
      return () => void listeners.delete(listener);
    },
    compare: compareStreamIds,
    ready: () => clients.commands.status === 'ready',
    async close() {
      closed = true;
      listeners.clear();
    },
  };
}
