import { setTimeout as sleep } from 'node:timers/promises';
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Cluster, Redis } from 'ioredis';
import type { TransactionUpdateEvent } from '../events/normalize.js';
import { BATCH, createOutageAwareApply, type HistoryFeed, type HistoryFeedOptions } from '../history/history-feed.js';
import type { Logger } from '../logging/logger.js';

/*
 * The history's reading of the event log in Redis, for a history kept
 * elsewhere (PostgreSQL) while the log is in Redis: every instance reads the
 * log's own stream through one consumer group, so each entry goes to one
 * instance, which applies it, then acknowledges it. The event is stored once:
 * the log's trimming never passes an entry the group has not acknowledged
 * (redis-event-log.ts `historyGroup`), so while the database is away the log
 * keeps what the history still needs, and grows; `full()` says so once it
 * holds `maxBehind` events the history has not applied, and webhooks are then
 * answered 503 (their senders retry) rather than letting it grow without
 * bound. An entry an instance read and never acknowledged (it died, or the
 * database did not answer it) is claimed by another after `claimIdleMs`
 * (XAUTOCLAIM) and applied again: applying an event twice changes nothing, so
 * nothing is lost and nothing counted twice, whichever instance dies when.
 *
 * `drain`: the stream is the separate queue of an earlier version (each
 * event copied into it): what it holds is applied and deleted, and the queue
 * itself once empty; then this reader stops.
 */

export interface RedisHistoryReaderOptions {
  /** The stream's key (the event log's). */
  key: string;
  /** Events the history may have left to apply before `full()` says so. */
  maxBehind: number;
  /** The stream is an earlier version's queue, emptied and then deleted. @default false */
  drain?: boolean;
  /** Applies events in the order given, all or none (what it says of each is not needed here). */
  apply: HistoryFeedOptions['apply'];
  /** Whether an apply error may pass when tried again (else the entry is logged and dropped). */
  transient(error: unknown): boolean;
  logger: Logger;
  /** How often the queue is looked at besides when an event is appended, and the wait after a failure (ms). */
  pollMs: number;
  /** How long an entry read by an instance may stay unacknowledged before another claims it (ms). */
  claimIdleMs: number;
}

/** The history's consumer group on the log's stream. */
export const HISTORY_GROUP = 'history';
const GROUP = HISTORY_GROUP;

type Entries = Array<[id: string, fields: string[] | null]>;

export function createRedisHistoryReader(commands: Redis | Cluster, options: RedisHistoryReaderOptions): HistoryFeed & { wake(): void } {
  const consumer = `${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`;
  let closed = false;
  const applyBatch = createOutageAwareApply(options, 'they wait in Redis and are tried again');
  /** The store or Redis failed last time: the timer tries again, not each event that arrives meanwhile. */
  let failing = false;
  let pumping: Promise<void> | undefined;
  let again = false;
  let grouped = false;
  /** Events the history had left to apply at the last look (`measure`): what a Redis that lost the group lost with it, at most. */
  let lastBehind = 0;

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

  /**
   * A Redis that restarted without its data (or whose stream was deleted) has no group: it is made again
   * at the next pump, from the new stream's start, so every event appended since is applied. What the old
   * group had not applied is gone with Redis's data: said once, with how much that was at the last look.
   */
  function groupLost(): void {
    grouped = false;
    options.logger.error(
      { notAppliedAtLastLook: lastBehind },
      "Redis no longer holds the history's consumer group (it restarted without its data?): re-creating it; events admitted " +
        'before and not yet applied to the history are lost with Redis',
    );
  }

  const read = async (from: '0' | '>'): Promise<Entries> => {
    const answer = (await commands.xreadgroup('GROUP', GROUP, consumer, 'COUNT', BATCH, 'STREAMS', options.key, from)) as Array<
      [string, Entries]
    > | null;
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
    if (options.drain)
      await commands
        .multi()
        .xack(options.key, GROUP, ...ids)
        .xdel(options.key, ...ids)
        .exec();
    else await commands.xack(options.key, GROUP, ...ids);
    return true;
  }

  /** Events the history has left to apply: read and not acknowledged, and not read yet. */
  async function behind(): Promise<number> {
    const groups = (await commands.xinfo('GROUPS', options.key)) as unknown[][];
    for (const group of groups) {
      const field = (name: string) => group[group.indexOf(name) + 1];
      // `lag` is unknown to Redis for a while after entries were deleted out of order: then the stream's length bounds it.
      if (field('name') === GROUP) return Number(field('pending')) + Number(field('lag') ?? (await commands.xlen(options.key)));
    }
    return Number(await commands.xlen(options.key));
  }
  let full = false;
  async function measure(): Promise<void> {
    const was = full;
    lastBehind = await behind();
    full = lastBehind >= options.maxBehind;
    if (full && !was)
      options.logger.warn(
        { maxBehind: options.maxBehind },
        'the history is as far behind the event log as it may be: webhooks get 503 until it catches up',
      );
  }

  async function pump(claim: boolean): Promise<void> {
    if (options.drain && Number(await commands.exists(options.key)) === 0) return void stop();
    await ensureGroup();
    if (claim && !options.drain) await measure();
    if (claim) await commands.xautoclaim(options.key, GROUP, consumer, options.claimIdleMs, '0-0', 'COUNT', BATCH);
    // This instance's own pending entries first (claimed, or left by a failure), then new ones.
    for (const from of ['0', '>'] as const) {
      for (let entries = await read(from); entries.length > 0 && !closed; entries = await read(from)) {
        if (!(await applyAll(entries))) return;
        // Entries left pending but not applied would be read again from '0' for ever: leave them to the next pump.
        if (from === '0' && entries.length < BATCH) break;
      }
    }
    // Read to the end, every batch applied: whatever failed before has passed.
    failing = false;
    // An earlier version's queue, emptied: nothing is left to claim in it.
    if (options.drain && !closed && Number(await commands.xlen(options.key)) === 0) {
      await commands.del(options.key);
      stop();
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
        if (String(error).includes('NOGROUP')) groupLost();
        else if (!failing) options.logger.warn({ err: error }, 'the history queue in Redis cannot be read now; trying again');
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
  function stop(): void {
    clearInterval(timer);
    closed = true;
  }
  wake(true);

  return {
    wake: () => wake(),
    pending: behind,
    feeding: () => !failing,
    full: () => full,
    async close(timeoutMs) {
      clearInterval(timer);
      // What this instance read and did not apply is claimed by another one (or by this deployment's next start).
      await Promise.race([pumping, sleep(timeoutMs, undefined, { ref: false })]);
      closed = true;
      // A consumer holding nothing leaves the group (one that holds entries stays, so that they can be claimed).
      try {
        const held = await commands.xpending(options.key, GROUP, '-', '+', 1, consumer);
        if (held.length === 0) await commands.xgroup('DELCONSUMER', options.key, GROUP, consumer);
      } catch {
        // Redis away: the consumer stays, holding nothing; another instance's claims pass it by.
      }
    },
  };
}
