import { RecentTransactionsDocument } from '../src/graphql/generated/operations.js';
import { runQuery } from './api.js';
import { coalesced } from './coalesced.js';
import type { RecentTransaction } from './history-view.js';
import { el, money } from './render.js';

/*
 * Payments stuck in pending: the transactions of the history whose status is
 * "pending" and whose last update is older than a threshold the operator sets
 * on the page (kept in the browser), longest stuck first. The question the
 * history was built to answer, asked of `recentTransactions` with `until`:
 * it is asked again on every live event (a payment that completes leaves the
 * list) and every few seconds (time alone makes a payment stuck).
 */

const STUCK_STATUS = 'pending';
const THRESHOLD_STORAGE = 'vending-gateway.stuck-minutes';
const DEFAULT_MINUTES = 10;
/** Most stuck payments listed; the count says how many there are. */
const ROWS = 50;
/** How often the list is asked again when nothing happens: a payment becomes stuck by time alone. */
const TICK_MS = 15_000;
const REFETCH_DELAY_MS = 300;
const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

export interface StuckPayments {
  /** A live event arrived: a payment may have moved on. */
  noteEvent(): void;
  stop(): void;
}

const MIN_MINUTES = 1;
const MAX_MINUTES = 1_440;

/** Minutes typed, when they are a whole number within the bounds; else undefined (the page says so). */
function minutesIn(text: string | null): number | undefined {
  const value = text === null || text.trim() === '' ? Number.NaN : Number(text);
  return Number.isInteger(value) && value >= MIN_MINUTES && value <= MAX_MINUTES ? value : undefined;
}

const pendingFor = (since: number, now: number): string => {
  const minutes = Math.floor((now - since) / 60_000);
  return minutes < 120 ? `pending for ${minutes} min` : `pending for ${Math.floor(minutes / 60)} h ${minutes % 60} min`;
};

function stuckRow(transaction: RecentTransaction, now: number): HTMLTableRowElement {
  const since = transaction.lastUpdated ? new Date(transaction.lastUpdated).getTime() : now;
  const lines =
    transaction.products.map((line) => `${line.quantity ?? 1} × ${line.productName ?? line.productId}`).join(', ') || 'no products';
  return el(
    'tr',
    { 'data-transaction-id': transaction.transactionId },
    el('td', { class: 'id', title: transaction.transactionId }, transaction.transactionId.slice(0, 8)),
    el('td', { class: 'num' }, money(transaction.total, transaction.currency)),
    el(
      'td',
      { class: 'late' },
      el('time', { datetime: new Date(since).toISOString(), title: new Date(since).toLocaleString() }, pendingFor(since, now)),
    ),
    el('td', { class: 'lines', title: lines }, lines),
  );
}

export function startStuckPayments(key: string): StuckPayments {
  const input = $<HTMLInputElement>('stuck-threshold');
  const note = $('stuck-note');
  /** The threshold in use: the box shows it, whatever was typed last. */
  let minutes = minutesIn(localStorage.getItem(THRESHOLD_STORAGE)) ?? DEFAULT_MINUTES;
  input.value = String(minutes);
  note.textContent = '';
  let stopped = false;

  const list = coalesced(async () => {
    const asked = minutes;
    const now = Date.now();
    try {
      const { recentTransactions: page } = await runQuery(
        RecentTransactionsDocument,
        { first: ROWS, status: [STUCK_STATUS], until: new Date(now - asked * 60_000).toISOString() },
        key,
      );
      if (stopped || asked !== minutes) return;
      const rows = page.edges.map((edge) => edge.node).reverse();
      $('stuck-rows').replaceChildren(
        ...(rows.length > 0
          ? rows.map((row) => stuckRow(row, now))
          : [el('tr', { class: 'empty' }, el('td', { colspan: '4' }, `No payment pending longer than ${asked} min.`))]),
      );
      $('stuck-count').textContent = `(${page.totalCount})`;
    } catch {
      // The history panel says in words why the history cannot be read; this list keeps what it showed.
    }
  }, REFETCH_DELAY_MS);

  // A value that is not a whole number of minutes within the bounds is refused in words, and the box shows the
  // threshold still in use: a box showing one value while the list uses another would mislead.
  const onChange = () => {
    const typed = input.value;
    const chosen = minutesIn(typed);
    if (chosen === undefined) {
      const what = typed.trim() === '' ? 'That is not a number' : `“${typed}” is refused`;
      note.textContent =
        `${what}: the threshold is a whole number of minutes from ${MIN_MINUTES} to ${MAX_MINUTES}. ` +
        `Still listing payments pending longer than ${minutes} min.`;
      input.value = String(minutes);
      return;
    }
    note.textContent = '';
    minutes = chosen;
    localStorage.setItem(THRESHOLD_STORAGE, String(minutes));
    list.now();
  };
  input.addEventListener('change', onChange);
  const tick = setInterval(() => list.soon(), TICK_MS);
  list.now();

  return {
    noteEvent: () => list.soon(),
    stop() {
      stopped = true;
      clearInterval(tick);
      list.stop();
      input.removeEventListener('change', onChange);
    },
  };
}
