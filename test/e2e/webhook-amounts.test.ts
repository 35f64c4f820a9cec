import { describe, expect, it } from 'vitest';
import { answeringGateway, TEST_KEY } from '../helpers/gateway.js';
import { startStandInUpstream } from '../helpers/stand-in-upstream.js';

/*
 * Prices and quantities whose product or sum is past the largest number
 * cannot be a total, a statistic or a GraphQL Float (nor, past
 * MAX_STORED_AMOUNT, be added up exactly by the history). Such a webhook is
 * refused in words; before, it was taken, and every read of the history
 * answered "Unexpected error." (with `data: null`) for everyone until it
 * left the history.
 */

describe('a webhook whose amounts cannot be added up', () => {
  it('is refused with 400 naming the line, and the history goes on answering', async () => {
    const running = await answeringGateway();
    try {
      const post = (products: unknown[], transactionId: string) =>
        running.fetch(`${running.url}/webhooks`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ event: 'transaction', data: { transactionId, status: 's', products } }),
        });
      const product = { productId: 'p', productName: 'a' };
      const huge = await post([{ ...product, productPrice: 1e308, quantity: 10 }], 'inf-1');
      expect(huge.status).toBe(400);
      expect(((await huge.json()) as { errors: { message: string } }).errors.message).toMatch(
        /products\[0\]: productPrice × quantity is past the largest number/,
      );
      const summed = await post(
        [
          { ...product, productPrice: 5e9, quantity: 1 },
          { ...product, productPrice: 5e9, quantity: 1 },
        ],
        'inf-2',
      );
      expect(summed.status).toBe(400);
      expect(((await summed.json()) as { errors: { message: string } }).errors.message).toMatch(
        /line totals add up to 10000000000, past 9007199254/,
      );
      expect((await post([{ ...product, productPrice: 2.5, quantity: 2 }], 'fine-1')).status).toBe(200);

      const answer = await running.fetch(`${running.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: TEST_KEY },
        body: JSON.stringify({
          query: '{ recentTransactions(first: 5) { nodes { transactionId total } } transactionStats { totalSold } }',
        }),
      });
      const body = (await answer.json()) as {
        data: { recentTransactions: { nodes: Array<{ transactionId: string; total: number }> }; transactionStats: { totalSold: number } };
        errors?: unknown;
      };
      expect(body.errors).toBeUndefined();
      expect(body.data.recentTransactions.nodes.map((node) => node.transactionId)).toContain('fine-1');
      expect(body.data.recentTransactions.nodes.map((node) => node.transactionId)).not.toContain('inf-1');
      expect(body.data.transactionStats.totalSold).toBeGreaterThanOrEqual(5);
    } finally {
      await running.close();
    }
  });
});

describe('a transaction from the service whose amounts cannot be added up', () => {
  it('fails its total with UPSTREAM_ERROR in words, the rest of the transaction served', async () => {
    const upstream = await startStandInUpstream({ keys: ['upstream-key'] });
    const running = await answeringGateway({ BACKEND: 'rest', UPSTREAM_URL: upstream.url, UPSTREAM_API_KEY: 'upstream-key' });
    try {
      const id = String(upstream.transactions[0]?.transactionId);
      upstream.transactions[0] = {
        ...upstream.transactions[0],
        products: [{ productId: 'p', productName: 'a', productPrice: 1e308, quantity: 1e308 }],
      };
      const answer = await running.fetch(`${running.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: TEST_KEY },
        body: JSON.stringify({
          query:
            `{ transaction(id: "${id}") { transactionId products { productId lineTotal } } ` +
            `again: transaction(id: "${id}") { total } }`,
        }),
      });
      const body = (await answer.json()) as {
        data: { transaction: { transactionId: string } | null; again: unknown };
        errors: Array<{ message: string; extensions: { code: string } }>;
      };
      expect(body.data.transaction?.transactionId).toBe(id);
      expect(body.errors.map((error) => error.extensions.code)).toEqual(['UPSTREAM_ERROR', 'UPSTREAM_ERROR']);
      expect(body.errors[0]!.message).toMatch(/past the largest number/);
    } finally {
      await running.close();
      await upstream.close();
    }
  });
});
