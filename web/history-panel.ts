import { RecentTransactionsDocument, TransactionStatsDocument, type TransactionStatsQuery } from '../src/graphql/generated/operations.js';
import { GatewayProblem, runQuery } from './api.js';
import { coalesced } from './coalesced.js';
import {
  coverageNote,
  coveredLater,
  fillChartCurrencies,
  fillStatusFilter,
  recentRows,
  statsSummary,
  topProductItems,
  topProductsOf,
} from './history-view.js';
import type { TransactionEvent } from './live-feed.js';
import { salesChart } from './sales-chart.js';

/*
 * The transaction history on the page: recent transactions with a
 * status filter, sales per minute over the last hour, and the top products,
 * from `recentTransactions` and `transactionStats`, with a note when the
 * history covers less than the hour (`coveredSince`). Live events do not carry
 * what these show (totals, last updates, counts), so an event asks for a
 * refetch, coalesced so that a burst of events costs one of each.
 */

const ROWS = 20;
/** Longest an event waits before the lists show it; also the fewest milliseconds between two refetches. */
const REFETCH_DELAY_MS = 300;
const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

export interface HistoryPanel {
  /** A live event arrived: the lists catch up soon. */
  noteEvent(event: TransactionEvent): void;
  /** The live feed is connected: after a reconnection, events may have been missed, so the lists catch up. */
  noteConnected(): void;
  stop(): void;
}

export function startHistoryPanel(key: string): HistoryPanel {
  const filter = $<HTMLSelectElement>('status-filter');
  const chartCurrency = $<HTMLSelectElement>('chart-currency');
  const chartBox = $('sales-chart');
  /** Every status met while the page is open, so a choice does not vanish when its last transaction changes. */
  const statuses = new Set<string>();
  let stats: TransactionStatsQuery['transactionStats'] | undefined;
  let stopped = false;
  let problems = { list: '', stats: '' };

  const chosenStatus = (): string | undefined => filter.value || undefined;

  function note(part: keyof typeof problems, message: string): void {
    problems = { ...problems, [part]: message };
    const text = [...new Set([problems.list, problems.stats].filter(Boolean))].join(' ');
    $('history-note').textContent = text ? `History unavailable: ${text}` : '';
  }

  function answered(part: keyof typeof problems): void {
    $('app').classList.remove('without-history');
    note(part, '');
  }

  /**
   * The page's own variables are always valid, so BAD_USER_INPUT means this
   * gateway keeps no history (HISTORY=off): its sections make way for the rest
   * until an answer comes (a gateway restarted with it on). Anything else may
   * pass (a restart): what was shown stays, with the note.
   */
  function failed(part: keyof typeof problems, error: unknown): void {
    if (stopped) return;
    if (error instanceof GatewayProblem && error.code === 'BAD_USER_INPUT') $('app').classList.add('without-history');
    note(part, error instanceof Error ? error.message : String(error));
  }

  function seen(more: Iterable<string>): void {
    for (const status of more) statuses.add(status);
    fillStatusFilter(filter, statuses);
  }

  const list = coalesced(async () => {
    const status = chosenStatus();
    try {
      const { recentTransactions: page } = await runQuery(
        RecentTransactionsDocument,
        { first: ROWS, status: status === undefined ? null : [status] },
        key,
      );
      // The filter changed while this was in flight: the run it asked for shows the right rows.
      if (stopped || status !== chosenStatus()) return;
      $('recent-rows').replaceChildren(
        ...recentRows(
          page.edges.map((edge) => edge.node),
          status,
        ),
      );
      $('recent-count').textContent = `(${page.totalCount})`;
      seen(page.edges.map((edge) => edge.node.status));
      answered('list');
    } catch (error) {
      failed('list', error);
    }
  }, REFETCH_DELAY_MS);

  function drawChart(): void {
    if (!stats) return;
    const width = Math.floor(chartBox.clientWidth);
    if (width > 0) chartBox.replaceChildren(salesChart(stats.intervals, width, chartCurrency.value));
  }

  const hour = coalesced(async () => {
    try {
      const { transactionStats } = await runQuery(TransactionStatsDocument, { interval: 'MINUTE' }, key);
      if (stopped) return;
      stats = transactionStats;
      fillChartCurrencies(chartCurrency, transactionStats.byCurrency);
      drawChart();
      $('sales-summary').replaceChildren(statsSummary(transactionStats));
      $('coverage-note').replaceChildren(...coverageNote(coveredLater(transactionStats)));
      $('top-products').replaceChildren(...topProductItems(topProductsOf(transactionStats.byCurrency)));
      seen(transactionStats.byStatus.map((entry) => entry.status));
      answered('stats');
    } catch (error) {
      failed('stats', error);
    }
  }, REFETCH_DELAY_MS);

  // The chart is drawn at its box's width (labels keep their size), so it is drawn again when that changes.
  let drawnWidth = 0;
  const resized = new ResizeObserver(() => {
    const width = Math.floor(chartBox.clientWidth);
    if (width !== drawnWidth) {
      drawnWidth = width;
      drawChart();
    }
  });
  resized.observe(chartBox);

  // The hour slides each minute even when nothing sells: refetch just after every minute starts.
  let minuteTimer: ReturnType<typeof setTimeout> | undefined;
  const nextMinute = () => {
    minuteTimer = setTimeout(
      () => {
        hour.now();
        nextMinute();
      },
      60_000 - (Date.now() % 60_000) + 250,
    );
  };
  nextMinute();

  // A new key starts afresh: the statuses of the last one are not this one's to offer.
  filter.replaceChildren();
  fillStatusFilter(filter, statuses);
  const onFilter = () => list.now();
  filter.addEventListener('change', onFilter);
  chartCurrency.replaceChildren();
  chartCurrency.addEventListener('change', drawChart);
  list.now();
  hour.now();

  let connections = 0;
  return {
    noteEvent(event) {
      seen([event.status]);
      list.soon();
      hour.soon();
    },
    noteConnected() {
      // The first connection follows the first load at once; only later ones can have missed something.
      if (connections++ === 0) return;
      list.soon();
      hour.soon();
    },
    stop() {
      stopped = true;
      $('history-note').textContent = '';
      $('coverage-note').textContent = '';
      $('app').classList.remove('without-history');
      list.stop();
      hour.stop();
      clearTimeout(minuteTimer);
      resized.disconnect();
      filter.removeEventListener('change', onFilter);
      chartCurrency.removeEventListener('change', drawChart);
    },
  };
}
