import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { TransactionUpdateEvent } from '../src/events/normalize.js';
import { DEFAULT_ACCOUNT } from '../src/contract/accounts.js';
import { recentQuery, statsQuery } from '../src/history/history-queries.js';
import { createMemoryHistory } from '../src/history/memory-history.js';

/*
 * `node --expose-gc --import tsx scripts/measure-history-memory.ts [sizes] [products]`: what the
 * in-process history costs as it grows, without HTTP (bench S10 measures it through a gateway).
 * For each size (default 10000,300000): the store is filled with that many transactions over the
 * last 8 days, `products` (default 2000) distinct products; then it prints
 *  - apply: µs per event at that size, for a new transaction at capacity (the oldest leaves) and
 *    for a late event (an update dated in the past, which lands mid-index);
 *  - recent: recentTransactions(first: 50) p50/p99, all statuses and one status, a page deep;
 *  - stats: a 7-day transactionStats by HOUR (every interval, all products) p50/p99, and the
 *    event loop's longest delay while the queries ran (monitorEventLoopDelay);
 *  - heap per transaction (after GC, with --expose-gc).
 * Run it on two builds to compare them; it touches nothing outside the process.
 */

const SIZES = (process.argv[2] ?? '10000,300000').split(',').map(Number);
const PRODUCTS = Number(process.argv[3] ?? 2_000);
const DAY = 86_400_000;
const WEEK = 7 * DAY;
const STATUSES = ['completed', 'pending', 'failed', 'refunded'];
const NOW = Date.UTC(2026, 10, 23, 12, 30);

/** mulberry32: the same series on every run, so two builds are given the same events. */
let seed = 42;
function random(): number {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
}

function event(transactionId: string, at: number, eventId: string): TransactionUpdateEvent {
  const lines = 1 + Math.floor(random() * 3);
  const products = Array.from({ length: lines }, () => {
    const n = Math.floor(random() * PRODUCTS);
    return { productId: `p${n}`, productName: `Product ${n}`, productPrice: 1 + (n % 7) * 0.25, quantity: 1 + Math.floor(random() * 2) };
  });
  const status = STATUSES[Math.floor(random() * STATUSES.length)]!;
  const time = new Date(at).toISOString();
  return {
    eventId,
    type: 'transaction.update',
    format: 'ENVELOPED',
    receivedAt: time,
    occurredAt: time,
    transactionId,
    status,
    products,
    transaction: { transactionId, status, products },
    raw: {},
  };
}

const gc = (globalThis as { gc?: () => void }).gc;
const heap = () => {
  gc?.();
  gc?.();
  return process.memoryUsage().heapUsed;
};
const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))]!;
const ms = (value: number) => value.toFixed(value < 1 ? 3 : 1);

async function timed(runs: number, run: () => Promise<unknown>): Promise<string> {
  const times: number[] = [];
  for (let i = 0; i < runs; i += 1) {
    const start = performance.now();
    await run();
    times.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  return `p50 ${ms(percentile(times, 50))} ms, p99 ${ms(percentile(times, 99))} ms`;
}

for (const size of SIZES) {
  const before = heap();
  const history = createMemoryHistory({
    maxTransactions: size,
    retentionMs: WEEK,
    defaultCurrency: 'EUR',
    soldStatuses: [],
    now: () => NOW,
  });
  // Over 8 days: the hours before the week asked hold transactions too (the slowest case to read).
  const step = (WEEK + DAY) / size;
  for (let i = 0; i < size; i += 1) history.apply(event(`t${i}`, NOW - WEEK - DAY + i * step, `e${i}`));
  const perTransaction = (heap() - before) / size;

  // At capacity: each new transaction pushes the least recently updated one out.
  const applies = 2_000;
  let start = performance.now();
  for (let i = 0; i < applies; i += 1) history.apply(event(`n${i}`, NOW - 1_000 + i, `n${i}`));
  const newAtCapacity = ((performance.now() - start) / applies) * 1_000;
  // Late: an update of a transaction in the middle, dated a day before its latest.
  start = performance.now();
  for (let i = 0; i < applies; i += 1) {
    const k = Math.floor(size / 2) + i;
    history.apply(event(`t${k}`, NOW - WEEK / 2 + i * step + 1, `late${i}`));
  }
  const late = ((performance.now() - start) / applies) * 1_000;

  const stats = statsQuery(DEFAULT_ACCOUNT, { since: new Date(NOW - WEEK), until: new Date(NOW), interval: 'HOUR' }, NOW);
  // Warm: the figures are a running gateway's, not its first query's compilation.
  for (let i = 0; i < 5; i += 1)
    await Promise.all([
      history.recent(recentQuery(DEFAULT_ACCOUNT, { first: 50 })),
      history.recent(recentQuery(DEFAULT_ACCOUNT, { first: 50, status: ['pending'] })),
      history.stats(stats),
    ]);
  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  const recentAll = await timed(200, () => history.recent(recentQuery(DEFAULT_ACCOUNT, { first: 50 })));
  const recentOne = await timed(200, () => history.recent(recentQuery(DEFAULT_ACCOUNT, { first: 50, status: ['pending'] })));
  const page = await history.recent(recentQuery(DEFAULT_ACCOUNT, { first: 50 }));
  // Yield between queries so the monitor sees each as a delay of its own.
  const weekByHour = await timed(100, async () => {
    await new Promise((resolve) => setImmediate(resolve));
    return history.stats(stats);
  });
  delay.disable();
  const sold = (await history.stats(stats)).products.length;
  history.close?.();
  process.stdout.write(
    [
      `size ${size} (${PRODUCTS} products, ${sold} sold in the week; ${page.records.length} on a page):`,
      `  apply: new at capacity ${ms(newAtCapacity)} µs, late ${ms(late)} µs`,
      `  recent(first: 50): all ${recentAll}; one status ${recentOne}`,
      `  transactionStats 7 days by HOUR: ${weekByHour}; event loop max delay ${ms(delay.max / 1e6)} ms`,
      `  heap per transaction: ${gc ? `${Math.round(perTransaction)} B` : 'run with --expose-gc'}`,
      '',
    ].join('\n'),
  );
}
