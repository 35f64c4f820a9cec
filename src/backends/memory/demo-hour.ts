import { createHash } from 'node:crypto';
import type { Transaction } from '../../contract/contract.js';
import type { DemoData } from './demo-data.js';

/*
 * An hour of demo sales, dated over the hour before `now`, for a first look
 * at the dashboard: the history fills only from events, so a demo that just
 * started would show an empty hour. The demo's baskets, the first ones the
 * demo transactions themselves, then new ids made from the seed; a busy spell
 * in the middle of the hour so the chart has a shape; a few refunded, and a
 * few left pending for long enough to be stuck payments.
 */

export interface DatedSale {
  transaction: Transaction;
  at: Date;
}

const SALES = 120;
const MINUTE = 60_000;

/** Ids for the sales past the demo's own transactions: UUID-shaped, the same on every start, unlike any demo id. */
function madeId(sale: number): string {
  const hex = createHash('sha1').update(`demo-sale-${sale}`).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/** The sales, each dated within the `spanMs` (an hour) before `now`. */
export function demoHourOfSales(demo: DemoData, now: number, spanMs: number): DatedSale[] {
  const minutes = Math.floor(spanMs / MINUTE);
  return Array.from({ length: SALES }, (_, sale): DatedSale => {
    const basket = demo.transactions[sale % demo.transactions.length]!;
    const transactionId = sale < demo.transactions.length ? basket.transactionId : madeId(sale);
    const minutesAgo = Math.min(sale % 3 === 0 ? 20 + ((sale * 7) % 15) : 1 + ((sale * 37) % 58), minutes - 1);
    const at = new Date(now - minutesAgo * MINUTE - ((sale * 13) % 50) * 1_000);
    const status = sale % 9 === 4 ? 'refunded' : sale % 23 === 7 ? 'pending' : 'completed';
    return { transaction: { ...basket, transactionId, status }, at };
  });
}
