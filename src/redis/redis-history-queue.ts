import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Cluster, Redis } from 'ioredis';
import type { TransactionUpdateEvent } from '../events/normalize.js';
import { BATCH, createOutageAwareApply, type HistoryFeed } from '../history/history-feed.js';
import type { Logger } from '../logging/logger.js';

/*
 * The history's queue in Redis, for a history kept elsewhere (PostgreSQL)
 * while the event log is in Redis: the log's append script adds each event it
 * admits to this stream in the same step (redis-event-log.ts `historyQueue`),
 * and every instance reads it through one consumer group, so each entry goes
 * to one instance, which applies it, then acknowledges and deletes it. An
 * entry an instance read and never acknowledged (it died, or the database
 * did not answer it) is claimed by another after `claimIdleMs` (XAUTOCLAIM)
 * and applied again: applying an event twice changes nothing, so nothing is
 * lost and nothing counted twice, whichever instance dies when.
 */

export interface RedisHistoryQueueOptions {
  /** The stream's key (the same the event log writes). */
  key: string;
  /** Applies events in the order given, all or none. */
  apply(events: readonly TransactionUpdateEvent[]): Promise<void>;
  /** Whether an apply error may pass when tried again (else the entry is logged and dropped). */
  transient(error: unknown): boolean;
  logger: Logger;
  /** How often the queue is looked at besides when an event is appended, and the wait after a failure (ms). */
  pollMs: number;
  /** How long an entry read by an instance may stay unacknowledged before another claims it (ms). */
  claimIdleMs: number;
}

const GROUP = 'history';

type Entries = Array<[id: string, fields: string[] | null]>;

export function createRedisHistoryQueue(commands: Redis | Cluster, options: RedisHistoryQueueOptions): HistoryFeed & { wake(): void } {
  const consumer = `${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`;
  let closed = false;
  const applyBatch = createOutageAwareApply(options, 'in Redis');
  /** The store or Redis failed last time: the timer tries again, not each event that arrives meanwhile. */
  let failing = false;
  let pumping: Promise<void> | undefined;
  let again = false;
  let grouped = false;

  async function ensureGroup(): Promise<void> {
    if (grouped) return;
    try {
      // From the stream's start: what was queued before any instance read it is applied too.
      await commands.xgroup('CREATE', options.key, GROUP, '0', 'MKSTREAM');
    } catch (error) {
      if (!String(error).includes('BUSYGROUP')) throw error;
    }
    grouped = true;
  }

  const read = async (from: '0' | '>'): Promise<Entries> => {
    const answer = (await commands.xreadgroup('GROUP', GROUP, consumer, 'COUNT', BATCH, 'STREAMS', options.key, from)) as Array<[string, Entries]> | null;
    return answer?.[0]?.[1] ?? [];
  };

  /** Applies entries in order, in one batch; resolves false when the store failed transiently (they stay pending, tried again later). */
  async function applyAll(entries: Entries): Promise<boolean> {
    const events: TransactionUpdateEvent[] = [];
    for (const [, fields] of entries) {
      // An entry deleted meanwhile (acknowledged by another instance) comes back without fields.
      const at = fields?.indexOf('event') ?? -1;
      const raw = at >= 0 ? fields?.[at + 1] : undefined;
      if (raw !== undefined) events.push(JSON.parse(raw) as TransactionUpdateEvent);
    }
    if (events.length > 0) {
      failing = (await applyBatch(events)) === 'retry';
      if (failing) return false;
    }
    const ids = entries.map(([id]) => id);
    await commands.multi().xack(options.key, GROUP, ...ids).xdel(options.key, ...ids).exec();
    return true;
  }

  async function pump(claim: boolean): Promise<void> {
    await ensureGroup();
    if (claim) await commands.xautoclaim(options.key, GROUP, consumer, options.claimIdleMs, '0-0', 'COUNT', BATCH);
    // This instance's own pending entries first (claimed, or left by a failure), then new ones.
    for (const from of ['0', '>'] as const) {
      for (let entries = await read(from); entries.length > 0 && !closed; entries = await read(from)) {
        if (!(await applyAll(entries))) return;
        // Entries left pending but not applied would be read again from '0' for ever: leave them to the next pump.
        if (from === '0' && entries.length < BATCH) break;
      }
    }
  }

  function wake(claim = false): void {
    if (closed) return;
    if (pumping) {
      again = true;
      return;
    }
    pumping = pump(claim)
      .catch((error: unknown) => {
        if (!failing) options.logger.warn({ err: error }, 'the history queue in Redis cannot be read now; trying again');
        failing = true;
      })
      .finally(() => {
        pumping = undefined;
        // After a failure the timer tries again (every `pollMs`), not each event that arrives meanwhile.
        if (again && !closed && !failing) wake();
        again = false;
      });
  }

  const timer = setInterval(() => wake(true), options.pollMs);
  timer.unref();
  wake(true);

  return {
    wake: () => wake(),
    pending: async () => Number(await commands.xlen(options.key)),
    // Held by Redis, bounded by its memory, not by this instance's.
    full: () => false,
    async close(timeoutMs) {
      clearInterval(timer);
      // What this instance read and did not apply is claimed by another one (or by this deployment's next start).
      await Promise.race([pumping, new Promise((resolve) => setTimeout(resolve, timeoutMs).unref())]);
      closed = true;
      // A consumer holding nothing leaves the group (one that holds entries stays, so that they can be claimed).
      try {
        const held = (await commands.xpending(options.key, GROUP, '-', '+', 1, consumer)) as unknown[];
        if (held.length === 0) await commands.xgroup('DELCONSUMER', options.key, GROUP, consumer);
      } catch {
        // Redis away: the consumer stays, holding nothing; another instance's claims pass it by.
      }
    },
  };
}
