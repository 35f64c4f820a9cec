import type { RecentTransactionsQuery, TransactionStatsQuery } from '../src/graphql/generated/operations.js';
import { el, money } from './render.js';

/*
 * The history's lists: recent transactions as table rows, the status filter's
 * choices, and the top products. Text from the service goes in as text only.
 */

export type RecentTransaction = RecentTransactionsQuery['recentTransactions']['edges'][number]['node'];
type Stats = TransactionStatsQuery['transactionStats'];
type CurrencyStats = Stats['byCurrency'][number];
/** A product's sales in one currency. */
type ProductSales = CurrencyStats['topProductsByQuantity'][number] & { currency: string };

/** How many products the top list shows, whatever their currencies. */
const TOP_SHOWN = 5;

/** Colours for the statuses the demo and most services use; any other status is shown plain. */
const TONES: Record<string, string> = {
  completed: 'ok',
  active: 'info',
  pending: 'warn',
  cancelled: 'bad',
  refunded: 'bad',
  failed: 'bad',
};

export const statusPill = (status: string): HTMLSpanElement =>
  el('span', { class: `pill ${TONES[status.toLowerCase()] ?? ''}`.trim() }, status);

const productsLine = (products: RecentTransaction['products']): string =>
  products.map((line) => `${line.quantity ?? 1} × ${line.productName ?? line.productId}`).join(', ') || 'no products';

export function recentRow(transaction: RecentTransaction): HTMLTableRowElement {
  const updated = transaction.lastUpdated ? new Date(transaction.lastUpdated) : undefined;
  const lines = productsLine(transaction.products);
  return el(
    'tr',
    { 'data-transaction-id': transaction.transactionId, 'data-status': transaction.status },
    el('td', { class: 'id', title: transaction.transactionId }, transaction.transactionId.slice(0, 8)),
    el('td', {}, statusPill(transaction.status)),
    el('td', { class: 'num' }, money(transaction.total, transaction.currency)),
    el('td', { class: 'lines', title: lines }, lines),
    el('td', { class: 'when' }, updated ? el('time', { datetime: updated.toISOString() }, updated.toLocaleTimeString()) : '—'),
  );
}

/** The rows, or one row saying why there are none. */
export function recentRows(transactions: readonly RecentTransaction[], status: string | undefined): HTMLTableRowElement[] {
  if (transactions.length > 0) return transactions.map(recentRow);
  const why = status === undefined ? 'No transactions yet: they appear here as events arrive.' : `No transactions with status “${status}”.`;
  return [el('tr', { class: 'empty' }, el('td', { colspan: '5' }, why))];
}

/** Fills the filter with "all" and every status seen, keeping the current choice. */
export function fillStatusFilter(select: HTMLSelectElement, statuses: ReadonlySet<string>): void {
  const chosen = select.value;
  const sorted = [...statuses].sort((a, b) => a.localeCompare(b));
  const current = [...select.options].map((option) => option.value);
  if (current.length === sorted.length + 1 && sorted.every((status, index) => current[index + 1] === status)) return;
  select.replaceChildren(el('option', { value: '' }, 'All statuses'), ...sorted.map((status) => el('option', { value: status }, status)));
  select.value = chosen;
}

/**
 * The products sold most by units, each in the currency it sold in: a product sold in two currencies is two entries,
 * since its amounts cannot be added.
 */
export function topProductsOf(byCurrency: readonly CurrencyStats[]): ProductSales[] {
  const all = byCurrency.flatMap((entry) => entry.topProductsByQuantity.map((product) => ({ ...product, currency: entry.currency })));
  return all
    .sort((a, b) => b.quantity - a.quantity || a.currency.localeCompare(b.currency) || a.productId.localeCompare(b.productId))
    .slice(0, TOP_SHOWN);
}

/**
 * The chart's currency choice: every currency of the hour, in code order; the operator's choice is kept, and at first
 * (or when it leaves the hour) the currency that sold most is drawn.
 */
export function fillChartCurrencies(select: HTMLSelectElement, byCurrency: readonly CurrencyStats[]): void {
  const chosen = select.value;
  const codes = byCurrency.map((entry) => entry.currency);
  const current = [...select.options].map((option) => option.value);
  if (current.join() !== codes.join()) select.replaceChildren(...codes.map((code) => el('option', { value: code }, code)));
  const most = [...byCurrency].sort((a, b) => b.count - a.count || b.totalSold - a.totalSold)[0]?.currency ?? '';
  select.value = codes.includes(chosen) ? chosen : most;
  select.hidden = codes.length === 0;
}

export function topProductItems(products: readonly ProductSales[]): HTMLLIElement[] {
  if (products.length === 0) return [el('li', { class: 'hint' }, 'Nothing sold in the last hour.')];
  const most = Math.max(...products.map((product) => product.quantity), 1);
  return products.map((product) => {
    const bar = el('span', { class: 'meter', 'aria-hidden': 'true' });
    // A width from a number the page computed, not from service text: allowed by style-src 'self' as a CSSOM write.
    bar.style.width = `${Math.round((product.quantity / most) * 100)}%`;
    return el(
      'li',
      { class: 'top-product', 'data-product-id': product.productId, 'data-currency': product.currency },
      el('span', { class: 'name' }, product.productName ?? product.productId),
      el('span', { class: 'num' }, `${product.quantity.toLocaleString()} sold · ${money(product.amount, product.currency)}`),
      el('span', { class: 'track' }, bar),
    );
  });
}

/** The hour in figures, above the chart: what sold in each currency (never one sum across them), and how many of each status. */
export function statsSummary(stats: Stats): HTMLElement {
  const sold = stats.byCurrency.filter((entry) => entry.totalSold !== 0);
  return el(
    'div',
    { class: 'summary' },
    ...(sold.length > 0
      ? sold.map((entry) =>
          el(
            'span',
            { class: 'figure', 'data-currency': entry.currency },
            el('strong', {}, money(entry.totalSold, entry.currency)),
            ' sold',
          ),
        )
      : [el('span', { class: 'figure' }, el('strong', {}, 'Nothing'), ' sold')]),
    el('span', { class: 'figure' }, el('strong', {}, String(stats.count)), ` transaction${stats.count === 1 ? '' : 's'}`),
    ...stats.byStatus.map((entry) => el('span', { class: 'figure' }, statusPill(entry.status), ` ${entry.count}`)),
  );
}

/**
 * When the history starts later than the range shown (a gateway started within
 * the hour, or a store bounded below an hour of sales): the time it covers
 * from, else undefined. Without it, part of an hour would read as the hour.
 */
export function coveredLater(stats: Pick<TransactionStatsQuery['transactionStats'], 'since' | 'coveredSince'>): Date | undefined {
  const covered = new Date(stats.coveredSince);
  return covered.getTime() > new Date(stats.since).getTime() ? covered : undefined;
}

/** The note under the chart's title: "History covers only since 14:05". */
export function coverageNote(covered: Date | undefined): Array<Node | string> {
  if (!covered) return [];
  const sameDay = covered.toDateString() === new Date().toDateString();
  const text = sameDay
    ? covered.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', hourCycle: 'h23' })
    : covered.toLocaleString();
  return [
    'History covers only since ',
    el('time', { datetime: covered.toISOString() }, text),
    ': earlier sales of this hour are not counted.',
  ];
}
