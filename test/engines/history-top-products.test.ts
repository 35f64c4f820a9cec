import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DEFAULT_ACCOUNT } from '../../src/contract/accounts.js';
import type { TransactionUpdateEvent } from '../../src/events/normalize.js';
import { MAX_TOP_PRODUCTS, statsQuery } from '../../src/history/history-queries.js';
import { topProducts, type TransactionStats } from '../../src/history/history-stats.js';
import type { HistoryStore } from '../../src/history/history-store.js';
import { createMemoryHistory } from '../../src/history/memory-history.js';
import type pg from 'pg';
import { postgresHistoryDeployment, type PostgresHistoryDeployment } from '../helpers/postgres.js';
import { runs } from '../property/arbitraries.js';

/*
 * The PostgreSQL history reads only the products a caller can ask for (the first MAX_TOP_PRODUCTS each way, overall and
 * in each currency); the in-process one keeps every product. Past that cut, with many ties at it (few quantities and
 * prices), ids whose UTF-8 and UTF-16 orders differ, names, and two currencies or one, every top list GraphQL can ask for must
 * be the same from both, and so must the currencies each product of an overall list was sold in, where they are more than
 * one (its deprecated `amount` is then refused, naming them).
 */

const T0 = Date.UTC(2026, 10, 23, 10, 0, 0);
const HOUR = 3_600_000;
const PREFIXES = ['p', 'P', 'é', '\uE000', '😀'];

const sale = fc.record({
  product: fc.nat({ max: 259 }),
  quantity: fc.constantFrom(1, 2),
  price: fc.constantFrom(0, 1, 2.5),
  currency: fc.constantFrom('EUR', 'SEK'),
  named: fc.boolean(),
  hour: fc.nat({ max: 47 }),
});
const sales = fc.array(sale, { minLength: 150, maxLength: 400 });
type Sale = typeof sale extends fc.Arbitrary<infer T> ? T : never;

const productId = (n: number) => `${PREFIXES[n % PREFIXES.length]}${Math.floor(n / PREFIXES.length)}`;

function toEvent(s: Sale, i: number): TransactionUpdateEvent {
  const line = {
    productId: productId(s.product),
    productName: s.named ? `Name ${s.product % 7}` : '',
    productPrice: s.price,
    quantity: s.quantity,
  };
  return {
    eventId: `e${i}`,
    type: 'transaction.update',
    format: 'ENVELOPED',
    receivedAt: new Date(T0 + s.hour * HOUR + i).toISOString(),
    occurredAt: new Date(T0 + s.hour * HOUR + i).toISOString(),
    currency: s.currency,
    transactionId: `t${i}`,
    status: 'completed',
    products: [line],
    transaction: { transactionId: `t${i}`, status: 'completed', products: [line] },
    raw: {},
  } satisfies TransactionUpdateEvent;
}

/** Every list GraphQL can ask for of a range's products, as its resolvers take them. */
function lists(stats: TransactionStats) {
  const out: Record<string, unknown> = {};
  for (const first of [1, 9, MAX_TOP_PRODUCTS])
    for (const by of ['quantity', 'amount'] as const) {
      out[`${by} ${first}`] = topProducts(stats.products, first, by).map((product) => {
        const currencies = stats.byCurrency
          .filter((entry) => entry.products.some((p) => p.productId === product.productId && p.amount !== 0))
          .map((entry) => entry.currency);
        // What GraphQL makes of them: its `amount`, or a refusal naming the currencies.
        return { ...product, currencies: currencies.length > 1 ? currencies : 'one or none' };
      });
      for (const entry of stats.byCurrency) out[`${entry.currency} ${by} ${first}`] = topProducts(entry.products, first, by);
    }
  return out;
}

async function sameLists(store: HistoryStore, memory: HistoryStore, now: number) {
  for (const [since, until] of [
    [T0, T0 + 48 * HOUR],
    [T0 + 5 * HOUR, T0 + 29 * HOUR],
  ] as const) {
    const query = statsQuery(DEFAULT_ACCOUNT, { since: new Date(since), until: new Date(until), interval: 'HOUR' }, now);
    const [fromStore, fromMemory] = [await store.stats(query), await memory.stats(query)];
    expect(lists(fromStore)).toEqual(lists(fromMemory));
  }
}

/** Gives both stores the sales, then compares their lists (the database emptied first). */
async function check(deployment: PostgresHistoryDeployment, pool: pg.Pool, input: Sale[]): Promise<void> {
  await deployment.admin.query(
    'TRUNCATE history_transactions, history_bucket_totals, history_bucket_products, history_bucket_currency_products, history_meta',
  );
  const now = T0 + 3 * 24 * HOUR;
  const options = { retentionMs: 7 * 24 * HOUR, defaultCurrency: 'EUR', soldStatuses: [], now: () => now };
  const memory = createMemoryHistory({ ...options, maxTransactions: 10_000 });
  const store = await deployment.instance(options, pool);
  const events = input.map(toEvent);
  for (let i = 0; i < events.length; i += 100) await store.applyAll(events.slice(i, i + 100));
  for (const event of events) memory.apply(event);
  await sameLists(store, memory, now);
}

describe('the PostgreSQL history cut to the products a caller can ask for', () => {
  it('lists the same top products, overall and per currency, as the in-process history that keeps them all', async () => {
    const deployment = await postgresHistoryDeployment();
    try {
      const pool = deployment.pool();
      await fc.assert(
        // In one currency (not the default one) too: PostgreSQL then sums the products once, overall.
        fc.asyncProperty(sales, fc.boolean(), (input, inOne) =>
          check(deployment, pool, inOne ? input.map((s) => ({ ...s, currency: 'SEK' as const })) : input),
        ),
        { ...runs(15), endOnFailure: true },
      );
    } finally {
      await deployment.close();
    }
  }, 300_000);

  it('says in which currencies a product of the overall list sold, where it is past the cut of each', async () => {
    // P0 sells 2 units for 2, one in each currency, tied with 300 products that each sell as much in one currency, and
    // first of them by id: first overall, and in each currency behind the 150 that sold twice as much there.
    const sold = (product: number, quantity: Sale['quantity'], price: Sale['price'], currency: Sale['currency']): Sale => ({
      product,
      quantity,
      price,
      currency,
      named: true,
      hour: product % 48,
    });
    const input = [sold(1, 1, 1, 'EUR'), sold(1, 1, 1, 'SEK')];
    for (let n = 2; n < 302; n += 1) input.push(sold(n, 2, 1, n < 152 ? 'EUR' : 'SEK'));
    const deployment = await postgresHistoryDeployment();
    try {
      await check(deployment, deployment.pool(), input);
    } finally {
      await deployment.close();
    }
  }, 120_000);
});
