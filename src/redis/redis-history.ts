import type { Redis, Result } from 'ioredis';
import type { ProductLine } from '../contract/index.js';
import { eventTime } from '../events/event-time.js';
import { contributionOf, type HistoryEntry, type HistoryRecord, type PaymentEntry } from '../history/history-record.js';
import { bucketKeys, increments, summarize, type BucketFields } from '../history/history-stats.js';
import type { HistoryOptions, HistoryStore } from '../history/history-store.js';
import type { AppendStep } from './redis-event-log.js';
import { APPLY_EVENT, NOTE_PAYMENT, READ_FIELDS, RECENT, RECORDS } from './redis-history-lua.js';

/*
 * The history in Redis, shared by every instance of a deployment:
 * an event is applied inside the event log's own append script (`appendStep`),
 * so exactly once, whichever instance received it, in the webhook's one round
 * trip; every read is one round trip too. It answers as the in-process store
 * (memory-history.ts) does; the scripts are in redis-history-lua.ts.
 *
 * Retention runs from when the gateway last changed a record, as in process:
 * each change drops a few records past it, each page read some more, and reads
 * skip any not dropped yet. Keys carry TTLs as well (a record retention plus
 * KEEP_MARGIN_MS after its last change, a bucket retention after its last),
 * so a deployment that stops writing leaves nothing behind.
 */

/** How long a record outlives its retention when no script runs to drop it (its sums are then not taken back). */
const KEEP_MARGIN_MS = 86_400_000;

type Values = Array<string | null>;

function toRecord(transactionId: string, values: Values): HistoryRecord {
  const field = Object.fromEntries(READ_FIELDS.map((name, index) => [name, values[index] ?? ''])) as Record<(typeof READ_FIELDS)[number], string>;
  // Kept without its products, which are the record's own (`pr`): nothing to take out when read.
  const transaction = JSON.parse(field.tx) as Record<string, unknown>;
  const products = JSON.parse(field.pr) as ProductLine[];
  return {
    transactionId,
    transaction,
    status: field.st,
    products,
    firstSeen: Number(field.fs),
    lastUpdated: Number(field.lu),
    latest: [Number(field.lt), Number(field.ls)],
    entries: (JSON.parse(field.en) as string[][]).map(([time, seq, status, eventId]): HistoryEntry => [Number(time), Number(seq), status!, eventId!]),
    payments: (JSON.parse(field.pa) as string[][]).map(([time, fields]): PaymentEntry => [Number(time), JSON.parse(fields!) as string[]]),
  };
}

// The history's scripts, registered on the connection by name (ioredis `defineCommand`): sent
// whole once per connection, then by SHA1. They name their keys themselves, from the prefix
// in their arguments (redis-history-lua.ts), so they declare none.
declare module 'ioredis' {
  interface RedisCommander<Context> {
    vendingGatewayHistoryNotePayment(...args: Array<string | number>): Result<number, Context>;
    vendingGatewayHistoryRecent(...args: Array<string | number>): Result<[number, number, ...Array<string | Array<string | null>>], Context>;
    vendingGatewayHistoryRecords(...args: Array<string | number>): Result<Array<Array<string | null> | null>, Context>;
  }
}

export function createRedisHistory(commands: Redis, options: HistoryOptions & { prefix: string }): HistoryStore & { appendStep: AppendStep } {
  commands.defineCommand('vendingGatewayHistoryNotePayment', { numberOfKeys: 0, lua: NOTE_PAYMENT });
  commands.defineCommand('vendingGatewayHistoryRecent', { numberOfKeys: 0, lua: RECENT });
  commands.defineCommand('vendingGatewayHistoryRecords', { numberOfKeys: 0, lua: RECORDS });
  const now = options.now ?? Date.now;
  const sold = new Set(options.soldStatuses);
  const space = `${options.prefix}history:`;
  /** The arguments every script starts with (redis-history-lua.ts `library`). */
  const common = (): Array<string | number> => {
    const at = now();
    return [space, at, at - options.retentionMs, options.retentionMs + KEEP_MARGIN_MS, options.retentionMs, options.maxTransactions];
  };

  /**
   * The state a record takes from an event or read-back: its transaction (without its products: they
   * are most of a record, kept once as its own), status, products, and what Lua adds to a bucket for
   * it, amounts as integer strings.
   */
  function state({ products: _carried, ...transaction }: Record<string, unknown>, status: string, products: readonly ProductLine[]): Array<string | number> {
    const made = contributionOf(status, products, sold);
    const adds = increments(made, 1);
    const names = made.sold ? made.products.map(([productId, name]) => [`p:${productId}`, name]) : [];
    return [
      JSON.stringify(transaction),
      status,
      JSON.stringify(products),
      adds.length,
      ...adds.flatMap(([field, by]) => [field, String(by)]),
      names.length,
      ...names.flat(),
    ];
  }

  return {
    appendStep: {
      lua: APPLY_EVENT,
      args: (event) => [...common(), event.transactionId, event.eventId, String(eventTime(event)), ...state(event.transaction, event.status, event.products)],
    },
    async notePayment(note, readBack) {
      const start = readBack ? ['read-back', ...state(readBack, readBack.status, readBack.products)] : [''];
      const args = [...common(), note.transactionId, String(note.at), JSON.stringify(note.fields), ...start];
      return (await commands.vendingGatewayHistoryNotePayment(...args)) === 1;
    },
    async recent(query) {
      // As in process: a cursor at or past `until` pages from `until` down.
      const upper = query.after && query.after.lastUpdated < query.until ? query.after : { lastUpdated: query.until, transactionId: '' };
      const args = [...common(), query.first, String(query.since), String(query.until), String(upper.lastUpdated), upper.transactionId, ...query.statuses];
      const [totalCount, more, ...found] = await commands.vendingGatewayHistoryRecent(...args);
      const page: HistoryRecord[] = [];
      for (let i = 0; i < found.length; i += 2) page.push(toRecord(found[i] as string, found[i + 1] as Values));
      return { records: page, hasNextPage: more === 1, totalCount };
    },
    async stats(query) {
      const pipeline = commands.pipeline();
      for (const key of bucketKeys(query)) pipeline.hgetall(`${space}${key}`);
      const answers = (await pipeline.exec()) ?? [];
      const buckets = answers.map(([error, fields]) => {
        if (error) throw error;
        return fields as BucketFields;
      });
      return summarize(query.since, query.until, query.interval, buckets);
    },
    async coveredSince() {
      const at = now();
      // Nothing written yet (or Redis emptied): coverage starts now, and stays there once written.
      const answers = (await commands.pipeline().set(`${space}since`, String(at), 'PX', options.retentionMs + KEEP_MARGIN_MS, 'NX').get(`${space}since`).get(`${space}evicted`).exec()) ?? [];
      const [since, evicted] = answers.slice(1).map(([error, value]) => {
        if (error) throw error;
        return Number(value ?? 0);
      });
      return Math.max(since!, at - options.retentionMs, evicted!);
    },
    async records(ids) {
      if (ids.length === 0) return [];
      const found = await commands.vendingGatewayHistoryRecords(...common(), ...ids);
      return found.map((values, index) => (values ? toRecord(ids[index]!, values) : undefined));
    },
  };
}
