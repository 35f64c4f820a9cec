import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildWebhookRequest } from '../../src/events/webhook-request.js';
import { postGraphQL } from '../helpers/graphql-client.js';
import { startGateway, TEST_KEY, type RunningGateway } from '../helpers/gateway.js';

/*
 * The deprecated figures that add amounts together (`totalSold`,
 * `StatusTotal.total`, `ProductSales.amount`) answered 10 EUR + 1000 SEK as
 * 1010. They stay in the schema, but answer only where their amounts are of
 * one currency; otherwise that field alone is an error naming `byCurrency`,
 * and everything else of the answer is served.
 */

const FIGURES = `{
  transactionStats {
    totalSold
    byStatus { status total }
    topProductsByAmount { productId amount }
    intervals { totalSold byStatus { total } byCurrency { currency totalSold } }
    byCurrency { currency totalSold }
  }
}`;

interface Answer {
  data?: {
    transactionStats: {
      totalSold: number | null;
      byStatus: Array<{ status: string; total: number | null }> | null;
      topProductsByAmount: Array<{ productId: string; amount: number | null }> | null;
      byCurrency: Array<{ currency: string; totalSold: number }>;
      intervals: Array<{ totalSold: number | null; byCurrency: Array<{ currency: string; totalSold: number }> }>;
    } | null;
  };
  errors?: Array<{ message: string; path: Array<string | number>; extensions: { code: string } }>;
}

describe('figures added across currencies', () => {
  let running: RunningGateway;
  beforeAll(async () => {
    running = await startGateway({ SIMULATOR: 'off', HISTORY_SOLD_STATUSES: 'completed' });
  });
  afterAll(() => running?.close());

  const sell = async (currency: string, price: number, productId = 'p1') => {
    const request = buildWebhookRequest({
      form: 'enveloped',
      id: randomUUID(),
      transaction: {
        transactionId: `t-${randomUUID().slice(0, 8)}`,
        status: 'completed',
        currency,
        products: [{ productId, productName: 'Water', productPrice: price, quantity: 1 }],
      },
    });
    const answer = await fetch(`${running.url}/webhooks`, { method: 'POST', headers: request.headers, body: request.body });
    expect(answer.status).toBe(200);
  };
  const figures = async () => (await postGraphQL<NonNullable<Answer['data']>>(running.url, FIGURES, { key: TEST_KEY })).body as Answer;

  it('answers them while every amount is of one currency', async () => {
    await sell('EUR', 10);
    const { data, errors } = await figures();
    expect(errors).toBeUndefined();
    expect(data?.transactionStats?.totalSold).toBe(10);
    expect(data?.transactionStats?.byStatus).toEqual([{ status: 'completed', total: 10 }]);
    expect(data?.transactionStats?.topProductsByAmount).toEqual([{ productId: 'p1', amount: 10 }]);
  });

  it('refuses each of them on its field, naming byCurrency, once two currencies are added', async () => {
    await sell('SEK', 1000);
    for (let send = 1; send <= 3; send += 1) {
      const { data, errors } = await figures();
      expect(data?.transactionStats?.byCurrency, `send ${send}`).toEqual([
        { currency: 'EUR', totalSold: 10 },
        { currency: 'SEK', totalSold: 1000 },
      ]);
      // Each interval's figures are refused where that interval holds both currencies: the two sales may well
      // fall in two minutes, each then answered in its own currency.
      const mixed = (data?.transactionStats?.intervals ?? []).flatMap((interval, index) =>
        interval.byCurrency.filter((entry) => entry.totalSold !== 0).length > 1 ? [index] : [],
      );
      const refused = (errors ?? []).map((error) => error.path.join('.'));
      expect(new Set(refused), `send ${send}`).toEqual(
        new Set([
          'transactionStats.totalSold',
          'transactionStats.byStatus.0.total',
          'transactionStats.topProductsByAmount.0.amount',
          ...mixed.flatMap((index) => [
            `transactionStats.intervals.${index}.totalSold`,
            `transactionStats.intervals.${index}.byStatus.0.total`,
          ]),
        ]),
      );
      for (const interval of data?.transactionStats?.intervals ?? []) {
        const sold = interval.byCurrency.filter((entry) => entry.totalSold !== 0);
        if (sold.length === 1) expect(interval.totalSold, `send ${send}`).toBe(sold[0]!.totalSold);
      }
      for (const error of errors ?? []) {
        expect(error.message).toMatch(/EUR, SEK.*byCurrency/);
        expect(error.extensions.code).toBe('BAD_USER_INPUT');
      }
      // Never the sum of two currencies.
      expect(JSON.stringify(data)).not.toContain('1010');
    }
  });
});
