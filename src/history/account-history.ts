import type { ProductLine } from '../contract/contract.js';
import { eventTime } from '../events/event-time.js';
import type { TransactionUpdateEvent } from '../events/normalize.js';
import { applyEvent, applyPayment, contributionOf, currencyOfRecord, type Applied, type HistoryRecord } from './history-record.js';
import type { TransactionStats } from './history-stats.js';
import { createMemoryBuckets } from './memory-buckets.js';
import type { HistoryOptions, PaymentNote, RecentPage, RecentQuery, StatsQuery } from './history-store.js';
import { compareKeyed, SortedIndex, type Keyed } from './sorted-index.js';

/*
 * One account's history in process: records by id, an index by last update
 * (all, and per status), running sums per minute, hour and day. Bounded by
 * count (HISTORY_MAX_TRANSACTIONS, least recently updated out first) and by
 * retention (HISTORY_RETENTION after the gateway last changed a record).
 * Synchronous, and blind to accounts: memory-history.ts keeps one per account
 * and says which a call is for (the account fields of queries and notes are
 * its to read, not this one's).
 */

export interface AccountHistory {
  apply(event: TransactionUpdateEvent): void;
  notePayment(note: PaymentNote, readBack?: { status: string; products: ProductLine[] } & Record<string, unknown>): boolean;
  recent(query: RecentQuery): RecentPage;
  stats(query: StatsQuery): TransactionStats;
  record(transactionId: string): HistoryRecord | undefined;
  /** As HistoryStore's coveredSince, for this account. */
  coveredSince(): number;
  /** Drops what is past retention: records, then days of sums no change touched since (a timer calls it, off the event path). */
  sweep(): void;
  size(): number;
  bucketCount(): number;
}

/**
 * `startedAt`: when the store started holding events, so that an account whose
 * first event came later is still covered from then (it sent nothing before).
 */
export function createAccountHistory(options: HistoryOptions, startedAt: number): AccountHistory {
  const now = options.now ?? Date.now;
  const sold = new Set(options.soldStatuses);
  const records = new Map<string, HistoryRecord>();
  // The indexes hold the records themselves: a record never changes (a change makes a new one, indexed in its place).
  const all = new SortedIndex<HistoryRecord>();
  const byStatus = new Map<string, SortedIndex<HistoryRecord>>();
  const buckets = createMemoryBuckets();
  /** When the gateway last changed each record (retention counts from it). */
  const touched = new Map<string, number>();
  let seq = 0;
  /** Just after the last update of the latest-updated transaction dropped by the count bound. */
  let evictedUntil = 0;

  const statusIndex = (status: string) => {
    let index = byStatus.get(status);
    if (!index) byStatus.set(status, (index = new SortedIndex<HistoryRecord>()));
    return index;
  };

  function contribute(record: HistoryRecord, sign: 1 | -1): void {
    // Made again each time rather than kept: a record's contribution depends only on its status and products.
    buckets.contribute(
      record.lastUpdated,
      contributionOf(record.status, record.products, sold, currencyOfRecord(record, options.defaultCurrency)),
      sign,
      now(),
    );
  }

  function unindex(record: HistoryRecord): void {
    all.remove(record);
    const index = byStatus.get(record.status);
    index?.remove(record);
    if (index?.size === 0) byStatus.delete(record.status);
    contribute(record, -1);
  }

  function index(record: HistoryRecord): void {
    all.insert(record);
    statusIndex(record.status).insert(record);
    contribute(record, 1);
  }

  function store(applied: Applied): boolean {
    if (!applied.changed) return false;
    if (applied.previous) unindex(applied.previous);
    records.set(applied.record.transactionId, applied.record);
    touched.delete(applied.record.transactionId);
    touched.set(applied.record.transactionId, now());
    index(applied.record);
    trim();
    return true;
  }

  /**
   * Drops the least recently updated past the count, and the records the
   * gateway has not changed for the retention: O(1) amortised, since each
   * record leaves once. Retention runs from when the gateway last changed a
   * record or bucket, not from the events' own times, which a sender may set
   * anywhere in the past. Buckets are swept by a timer (`sweep`, which
   * memory-history.ts calls), off the event and request path: one past
   * retention is empty by then (its records left first, taking their sums
   * back), so when it goes changes no count or sum; only a product name it
   * last held may go with it.
   */
  function trim(): void {
    while (all.size > options.maxTransactions) {
      const oldest = all.first()!;
      evictedUntil = Math.max(evictedUntil, oldest.lastUpdated + 1);
      drop(oldest.transactionId);
    }
    const horizon = now() - options.retentionMs;
    // Oldest change first (each change moves its record to the end): nothing to do costs one look.
    for (const [id, at] of touched) {
      if (at >= horizon) break;
      drop(id);
    }
  }

  function sweep(): void {
    // Records first: a bucket past retention is then empty (its records took their sums back).
    trim();
    buckets.sweep(now() - options.retentionMs);
  }

  function drop(transactionId: string): void {
    const record = records.get(transactionId);
    if (record) unindex(record);
    records.delete(transactionId);
    touched.delete(transactionId);
  }

  function recent(query: RecentQuery): RecentPage {
    const indexes = query.statuses.length === 0 ? [all] : query.statuses.flatMap((status) => byStatus.get(status) ?? []);
    trim();
    const upper: Keyed =
      query.after && query.after.lastUpdated < query.until ? query.after : { lastUpdated: query.until, transactionId: '' };
    // One walk per index, down from the upper bound; the newest of their heads goes next.
    const walks = indexes.map((index) => index.below(upper));
    const heads = walks.map((walk) => walk.next().value);
    const picked: HistoryRecord[] = [];
    while (picked.length <= query.first) {
      let best = -1;
      for (let i = 0; i < heads.length; i += 1) {
        const item = heads[i];
        if (item === undefined || item.lastUpdated < query.since) continue;
        if (best < 0 || compareKeyed(item, heads[best]!) > 0) best = i;
      }
      if (best < 0) break;
      picked.push(heads[best]!);
      heads[best] = walks[best]!.next().value;
    }
    return {
      records: picked.slice(0, query.first),
      hasNextPage: picked.length > query.first,
      totalCount: indexes.reduce((sum, index) => sum + index.countBetween(query.since, query.until), 0),
    };
  }

  return {
    apply(event) {
      store(applyEvent(records.get(event.transactionId), event, eventTime(event), ++seq));
    },
    notePayment: (note, readBack) =>
      store(applyPayment(records.get(note.transactionId), note.transactionId, note.at, ++seq, note.fields, readBack)),
    recent,
    stats: (query) => buckets.stats(query.since, query.until, query.interval),
    record: (transactionId) => records.get(transactionId),
    coveredSince: () => Math.max(startedAt, now() - options.retentionMs, evictedUntil),
    sweep,
    size: () => records.size,
    bucketCount: () => buckets.count(),
  };
}
