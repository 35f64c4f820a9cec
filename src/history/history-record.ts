import { currencyInFields, lineAmount, lineQuantity, type ProductLine } from '../contract/contract.js';
import type { TransactionUpdateEvent } from '../events/normalize.js';

/*
 * One transaction's history, and the rules that change it. Pure,
 * and the only copy: the in-process store applies them directly, and the
 * PostgreSQL store (src/postgres/postgres-history.ts) applies them to the row
 * it locked; a differential test runs both on the same shuffled series.
 *
 * Order is (time, seq): the event's own time (the envelope's timestamp, else
 * when the gateway received it), then the order the store applied it in, so
 * two events of one millisecond keep their arrival order. The latest event by
 * that order gives the transaction its status, products and total: an event
 * that arrives late is kept in the history but never moves the state back.
 */

/** A distinct event of the transaction: [time ms, seq, status, event id ('' for a payment's read-back)]. */
export type HistoryEntry = [time: number, seq: number, status: string, eventId: string];

/** A payment update made through the gateway: [time ms, names of the fields it set]. The values stay upstream. */
export type PaymentEntry = [time: number, fields: string[]];

/**
 * What one transaction adds to the statistics of the interval holding its
 * last update, amounts in millionths (integers, so adding and taking back is exact).
 */
export interface Contribution {
  status: string;
  /** Whether it counts as sold (HISTORY_SOLD_STATUSES). */
  sold: boolean;
  /** The currency of its amounts (ISO 4217, upper case): money is summed per currency, never across. */
  currency: string;
  total: number;
  /** [productId, productName, quantity, amount], amounts in millionths. */
  products: Array<[string, string, number, number]>;
}

export interface HistoryRecord {
  transactionId: string;
  /**
   * The currency of its amounts as the gateway decided it for its latest event (contract/currency.ts); absent in
   * records kept before currencies were, read then as `currencyOfRecord` says.
   */
  currency?: string;
  /** The transaction as its latest event carried it (unknown fields kept), but for its products: see `products`. */
  transaction: Record<string, unknown>;
  status: string;
  products: ProductLine[];
  firstSeen: number;
  lastUpdated: number;
  /** Order key of the event that gave the state. */
  latest: [time: number, seq: number];
  /** Every distinct event, in (time, seq) order; the oldest go past MAX_ENTRIES. */
  entries: HistoryEntry[];
  payments: PaymentEntry[];
}

/** Events kept per transaction (a status flip-flopping for ever must not grow a record without end). */
export const MAX_ENTRIES = 100;
/** Payment updates kept per transaction. */
export const MAX_PAYMENTS = 20;

const MICRO = 1_000_000;
export const toMicro = (value: number): number => Math.round(value * MICRO);
/**
 * Millionths back to units. Sums of millionths are whole numbers (toMicro rounds), and dividing one is rounded once to
 * the nearest double, exactly as reading its six-decimal text would be; only a fraction goes through the text.
 */
export const fromMicro = (micro: number): number => (Number.isSafeInteger(micro) ? micro / MICRO : Number((micro / MICRO).toFixed(6)));

/** Which statuses count as sold; empty: all of them. */
export type SoldStatuses = ReadonlySet<string>;
const isSold = (sold: SoldStatuses, status: string) => sold.size === 0 || sold.has(status);

/** A record's currency: the one decided for its latest event, else the one its fields name, else the gateway's default. */
export const currencyOfRecord = (record: Pick<HistoryRecord, 'currency' | 'transaction'>, defaultCurrency: string): string =>
  record.currency ?? currencyInFields(record.transaction) ?? defaultCurrency;

export function contributionOf(status: string, products: readonly ProductLine[], sold: SoldStatuses, currency: string): Contribution {
  let total = 0;
  const lines: Contribution['products'] = [];
  for (const line of products) {
    const quantity = lineQuantity(line);
    const raw = toMicro(lineAmount(line) ?? 0);
    // Amounts past the largest number (only the service's own data can still carry them) count nothing, so no sum becomes Infinity.
    const amount = Number.isFinite(raw) ? raw : 0;
    total += amount;
    const micros = toMicro(quantity);
    lines.push([line.productId, line.productName ?? '', Number.isFinite(micros) ? micros : 0, amount]);
  }
  return { status, sold: isSold(sold, status), currency, total, products: lines };
}

const before = (a: readonly [number, number], b: readonly [number, number]) => a[0] < b[0] || (a[0] === b[0] && a[1] < b[1]);

/** What applying an event did: nothing (a redelivery or replay), or the record before and after. */
export type Applied = { changed: false } | { changed: true; previous: HistoryRecord | undefined; record: HistoryRecord };

/**
 * The record after `event` (time and seq given by the store). An event id the
 * record already holds changes nothing. `record` is not modified.
 */
export function applyEvent(record: HistoryRecord | undefined, event: TransactionUpdateEvent, time: number, seq: number): Applied {
  if (record?.entries.some((entry) => entry[3] === event.eventId)) return { changed: false };
  const entry: HistoryEntry = [time, seq, event.status, event.eventId];
  if (!record) {
    return {
      changed: true,
      previous: undefined,
      record: withCurrency(fresh(event.transactionId, event.transaction, event.status, event.products, entry), event.currency),
    };
  }
  const entries = insertEntry(record.entries, entry);
  const newest = before(record.latest, [time, seq]);
  const next: HistoryRecord = {
    ...record,
    entries,
    firstSeen: Math.min(record.firstSeen, time),
    lastUpdated: Math.max(record.lastUpdated, time),
  };
  if (newest) {
    Object.assign(next, {
      transaction: withoutProducts(event.transaction),
      status: event.status,
      products: event.products,
      latest: [time, seq],
    });
    if (event.currency !== undefined) next.currency = event.currency;
    else delete next.currency;
  }
  return { changed: true, previous: record, record: next };
}

/**
 * A payment update at `time`. Without a record, `transaction` (read back) makes
 * one whose first entry is the status it was read with; without either, nothing.
 */
export function applyPayment(
  record: HistoryRecord | undefined,
  transactionId: string,
  time: number,
  seq: number,
  fields: string[],
  transaction: ({ status: string; products: ProductLine[] } & Record<string, unknown>) | undefined,
): Applied {
  const payment: PaymentEntry = [time, fields];
  if (!record) {
    if (!transaction) return { changed: false };
    const made = fresh(transactionId, transaction, transaction.status, transaction.products, [time, seq, transaction.status, '']);
    return { changed: true, previous: undefined, record: { ...made, payments: [payment] } };
  }
  const payments = [...record.payments, payment].sort((a, b) => a[0] - b[0]).slice(-MAX_PAYMENTS);
  return { changed: true, previous: record, record: { ...record, payments, lastUpdated: Math.max(record.lastUpdated, time) } };
}

/** The record with the event's currency when the event carries one. */
const withCurrency = (record: HistoryRecord, currency: string | undefined): HistoryRecord =>
  currency === undefined ? record : { ...record, currency };

/**
 * The transaction as kept: its products are the record's own (the contract's
 * checked copy), so the copy as received is not kept twice (most of a record).
 */
function withoutProducts(transaction: Record<string, unknown>): Record<string, unknown> {
  const { products: _products, ...rest } = transaction;
  return rest;
}

function fresh(
  transactionId: string,
  transaction: Record<string, unknown>,
  status: string,
  products: ProductLine[],
  entry: HistoryEntry,
): HistoryRecord {
  return {
    transactionId,
    transaction: withoutProducts(transaction),
    status,
    products,
    firstSeen: entry[0],
    lastUpdated: entry[0],
    latest: [entry[0], entry[1]],
    entries: [entry],
    payments: [],
  };
}

function insertEntry(entries: readonly HistoryEntry[], entry: HistoryEntry): HistoryEntry[] {
  const next = [...entries];
  let at = next.length;
  while (at > 0 && before([entry[0], entry[1]], [next[at - 1]![0], next[at - 1]![1]])) at -= 1;
  next.splice(at, 0, entry);
  return next.length > MAX_ENTRIES ? next.slice(next.length - MAX_ENTRIES) : next;
}

/** A status change: the first event of each run of one status, in order. */
export interface StatusChange {
  status: string;
  at: number;
  /** The event that made it; null for a status read back after a payment update. */
  eventId: string | null;
}

/** The status changes of a record: consecutive events of one status are one change. */
export function statusChanges(entries: readonly HistoryEntry[]): StatusChange[] {
  const changes: StatusChange[] = [];
  for (const [time, , status, eventId] of entries) {
    if (changes.at(-1)?.status === status) continue;
    changes.push({ status, at: time, eventId: eventId === '' ? null : eventId });
  }
  return changes;
}
