import { performance } from 'node:perf_hooks';
import { BodyCheck } from './expect.js';
import { uuid, type ProductLine } from './fixtures.js';
import { askGateway } from './servers.js';
import { percentiles } from './stats.js';
import { webhookSender, type WebhookTransaction } from './webhooks.js';

const STEP_MS = 1_000;
const SERIES_KIND = 6;
export const PAGE = 50;

export interface SeriesEvent {
  id: string;
  transaction: WebhookTransaction;
  at: Date;
}

export type HistorySeries = ReturnType<typeof historySeries>;

const finalStatus = (i: number): string => (i % 4 === 0 ? 'pending' : i % 4 === 3 ? 'failed' : 'completed');
/** Distinct products sold over the series: what the statistics' top products sort (an operator's range). */
export const SERIES_PRODUCTS = 2_000;
const PRODUCT_KIND = 7;
/** Product `k` of the series' catalogue; prices in quarters, so sums stay exact in binary floating point. */
function product(k: number, quantity: number): ProductLine {
  const n = k % SERIES_PRODUCTS;
  return {
    productId: uuid(PRODUCT_KIND, n),
    productName: `Product ${n}`,
    productPrice: 1 + (n % 7) * 0.25,
    productThumbnail: `https://cdn.example.com/s10/${n}.png`,
    productSku: `S10-${n}`,
    quantity,
  };
}
const productsOf = (i: number): ProductLine[] => [0, 1, 2].map((k) => product(i + 667 * k, 1 + ((i + k) % 3)));

/** A series of up to `size` transactions, the newest dated `newestAt` (ms); `tag` keeps its event ids apart from another run's. */
export function historySeries(size: number, newestAt: number, tag: string) {
  const start = newestAt - size * STEP_MS;
  const pendingAt = (i: number) => start + i * STEP_MS;
  const lastUpdated = (i: number) => pendingAt(i) + (i % 4 === 0 ? 0 : STEP_MS / 2);
  const transaction = (i: number, status: string): WebhookTransaction => ({
    transactionId: uuid(SERIES_KIND, i),
    status,
    products: productsOf(i),
  });
  const node = (i: number) => {
    const products = productsOf(i);
    return {
      transactionId: uuid(SERIES_KIND, i),
      status: finalStatus(i),
      // Prices are in quarters: the sum is exact in binary floating point, as the gateway computes it.
      total: products.reduce((sum, p) => sum + p.productPrice * p.quantity, 0),
      lastUpdated: new Date(lastUpdated(i)).toISOString(),
      products: products.map(({ productId, quantity }) => ({ productId, quantity })),
    };
  };
  return {
    /** The events of transactions [from, to), in series order (each transaction's pending first). */
    events(from: number, to: number) {
      const out: SeriesEvent[] = [];
      for (let i = from; i < to; i += 1) {
        out.push({ id: `s10-${tag}-${i}-p`, transaction: transaction(i, 'pending'), at: new Date(pendingAt(i)) });
        if (i % 4 !== 0) out.push({ id: `s10-${tag}-${i}-f`, transaction: transaction(i, finalStatus(i)), at: new Date(lastUpdated(i)) });
      }
      return out;
    },
    /** How many of transactions [0, count) were last updated in [since, until) (ms): STATS_QUERY's `count`. */
    countBetween(count: number, since: number, until: number) {
      let n = 0;
      for (let i = 0; i < count; i += 1) if (lastUpdated(i) >= since && lastUpdated(i) < until) n += 1;
      return n;
    },
    /** The answer to RECENT_QUERY (or RECENT_PENDING_QUERY with `pendingOnly`) once transactions [0, count) are in. */
    recentCheck(count: number, pendingOnly = false) {
      const nodes = [];
      for (let i = count - 1; i >= 0 && nodes.length < PAGE; i -= 1) if (!pendingOnly || finalStatus(i) === 'pending') nodes.push(node(i));
      return new BodyCheck({ data: { recentTransactions: { nodes } } });
    },
  };
}

const NODE_FIELDS = 'transactionId status total lastUpdated products { productId quantity }';
export const RECENT_QUERY = `query Recent { recentTransactions(first: ${PAGE}) { nodes { ${NODE_FIELDS} } } }`;
/** A dashboard's week: 168 hours, every interval's statuses, the range's top products both ways, and what it covers. */
export const STATS_QUERY =
  `query Week($since: DateTime!, $until: DateTime!) { ` +
  `transactionStats(since: $since, until: $until, interval: HOUR) {
  count totalSold coveredSince byStatus { status count total } intervals { start count totalSold byStatus { status count total } }
  topProductsByQuantity(first: 10) { productId productName quantity amount } ` +
  `topProductsByAmount(first: 10) { productId productName quantity amount } } }`;
export const RECENT_PENDING_QUERY =
  `query RecentPending { recentTransactions(first: ${PAGE}, status: ["pending"]) ` + `{ nodes { ${NODE_FIELDS} } } }`;

/**
 * Posts `events` to a gateway, `inFlight` at a time over kept-alive connections; answer times as the sender saw them.
 * `failed`: answers other than 200 and webhooks never answered, once retried; `retried`: 503 answers the sender came back after.
 */
export async function postEvents(gatewayUrl: string, events: SeriesEvent[], inFlight = 32) {
  const sender = webhookSender(gatewayUrl, inFlight);
  const ms = new Array<number>(events.length);
  let failed = 0;
  let retried = 0;
  let next = 0;
  const started = performance.now();
  const worker = async () => {
    for (let k = next++; k < events.length; k = next++) {
      const { id, transaction, at } = events[k]!;
      try {
        let posted = await sender.postUpdate(id, transaction, at);
        // A 503 asks the sender to come back (a history as far behind its database as it may be): a sender does.
        for (let tries = 0; posted.status === 503 && tries < 600; tries += 1) {
          retried += 1;
          await new Promise((resolve) => setTimeout(resolve, 200));
          posted = await sender.postUpdate(id, transaction, at);
        }
        ms[k] = posted.ms;
        if (posted.status !== 200) failed += 1;
      } catch {
        ms[k] = Number.NaN;
        failed += 1;
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: inFlight }, worker));
  } finally {
    await sender.close();
  }
  const [p50, p99] = percentiles(ms, [50, 99]);
  return {
    webhooks: events.length,
    seconds: (performance.now() - started) / 1_000,
    failed,
    retried,
    p50: p50!,
    p99: p99!,
  };
}

/** How many transactions the gateway's history holds (`totalCount`), or why it could not say (HISTORY=off answers an error). */
export async function historyTotal(gatewayUrl: string): Promise<number | string> {
  const { status, text } = await askGateway(gatewayUrl, '{ recentTransactions(first: 0) { totalCount } }');
  const body = JSON.parse(text) as { data?: { recentTransactions?: { totalCount: number } }; errors?: Array<{ message: string }> };
  return body.data?.recentTransactions?.totalCount ?? body.errors?.[0]?.message ?? `status ${status}`;
}
