import type { ProductLine } from '../contract/contract.js';
import type { TransactionUpdateEvent } from '../events/normalize.js';
import type { HistoryRecord } from './history-record.js';
import type { Interval, TransactionStats } from './history-stats.js';

/*
 * The transaction history read model: what the REST service cannot
 * list. Fed by every distinct published event, once (in the event log's own
 * append step), and by payment updates made through the gateway; read by
 * GraphQL. In process (bounded), or in PostgreSQL (shared by every instance).
 *
 * Each account's history is apart (contract/accounts.ts): an event goes to
 * the history of its account (`event.account`, absent: the default account),
 * every read and write names the account it is for, and two accounts sending
 * one transaction id keep two records that know nothing of each other.
 */

/** Where a page of the recent list ends: the last update and id of its last transaction. */
export interface RecentCursor {
  lastUpdated: number;
  transactionId: string;
}

export interface RecentQuery {
  /** The account whose history is read (a cursor is a position in it, never in another's). */
  account: string;
  first: number;
  after: RecentCursor | undefined;
  /** Only these statuses; empty: every status. */
  statuses: readonly string[];
  /** Last update at or after (ms). */
  since: number;
  /** Last update before (ms). */
  until: number;
  /** Whether the page must carry `totalCount`; counting costs a store more than the page when nobody reads it. Default true. */
  withTotal?: boolean;
}

export interface RecentPage {
  records: HistoryRecord[];
  hasNextPage: boolean;
  /** Transactions matching the statuses and time range, over all pages; may be left out when the query said `withTotal: false`. */
  totalCount?: number;
}

export interface StatsQuery {
  /** The account whose history is read. */
  account: string;
  /** Aligned to the interval. */
  since: number;
  until: number;
  interval: Interval;
}

export interface PaymentNote {
  /** The account whose record of the transaction the update goes to. */
  account: string;
  transactionId: string;
  /** Names of the fields the update set (their values stay upstream). */
  fields: string[];
  at: number;
}

export interface HistoryStore {
  /**
   * Whether the records of its recent pages are objects it keeps and hands out again to later reads (in process; in
   * PostgreSQL, the pages each instance keeps while their account does not change); when not (records parsed afresh
   * at every read), remembering what is derived from one is work for nothing.
   */
  readonly keepsRecords?: boolean;
  /**
   * Applies an event the log just admitted to its account's history: at once in process, in a
   * database transaction for PostgreSQL (which may fail: the caller tries again; applying twice
   * changes nothing).
   */
  apply?(event: TransactionUpdateEvent): void | Promise<void>;
  /**
   * Records a payment update; resolves `false` when the transaction has no
   * record and none was given to start one.
   */
  notePayment(note: PaymentNote, readBack?: { status: string; products: ProductLine[] } & Record<string, unknown>): Promise<boolean>;
  recent(query: RecentQuery): Promise<RecentPage>;
  stats(query: StatsQuery): Promise<TransactionStats>;
  /** The account's records of these transactions, in order; undefined where there is none. */
  records(account: string, ids: readonly string[]): Promise<Array<HistoryRecord | undefined>>;
  /**
   * From when (epoch ms) the store holds every transaction of the account
   * updated since: the latest of when it started holding events, now −
   * retention, and just after the last update of any transaction of the
   * account it dropped to stay within its count. A range starting earlier is
   * answered from a part of it only.
   */
  coveredSince(account: string): Promise<number>;
  /** Stops what the store runs by itself (timers); in process only. */
  close?(): void;
}

export interface HistoryOptions {
  /** Most transactions kept per account; the least recently updated of the account go first. */
  maxTransactions: number;
  /** A transaction not updated for this long is forgotten (ms). */
  retentionMs: number;
  /** Statuses that count as sold; empty: all. */
  soldStatuses: readonly string[];
  /** The currency of a record whose events and fields named none (DEFAULT_CURRENCY). */
  defaultCurrency: string;
  /** @default Date.now */
  now?: () => number;
  /**
   * From when the in-process store holds every transaction (its `coveredSince` at the start): when it was made, unless
   * it is given all that came earlier (the demo's hour of dated sales). @default now()
   */
  coveredFrom?: number;
}
