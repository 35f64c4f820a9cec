import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_STORED_AMOUNT } from '../../src/contract/amounts.js';
import { answeringGateway, TEST_KEY, type RunningGateway } from '../helpers/gateway.js';
import { testDatabase, type TestDatabase } from '../helpers/postgres.js';

/*
 * A webhook is acknowledged only with what every store can keep: PostgreSQL's
 * text holds no NUL and no lone UTF-16 surrogate, and the history adds
 * amounts in millionths, exactly only up to MAX_STORED_AMOUNT. Before, such
 * a webhook was answered 200 and published, then PostgreSQL refused it and
 * the history skipped it (the in-process store kept it: the two disagreed).
 * Each is refused with 400 naming the field, in every deployment alike, and
 * what is at the bound is kept and read back the same.
 */

const DEPLOYMENTS = ['in process', 'PostgreSQL'] as const;

for (const deployment of DEPLOYMENTS) {
  describe(`webhooks the history could not keep, ${deployment}`, () => {
    let database: TestDatabase | undefined;
    let running: RunningGateway;
    beforeAll(async () => {
      if (deployment === 'PostgreSQL') database = await testDatabase();
      running = await answeringGateway(database ? { DATABASE_URL: database.url } : {});
    });
    afterAll(async () => {
      await running?.close();
      await database?.drop();
    });

    const post = (transaction: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
      running.fetch(`${running.url}/webhooks`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ type: 'transaction.update', id: randomUUID(), data: transaction, ...extra }),
      });
    const line = { productId: 'p1', productName: 'Water', productPrice: 2, quantity: 1 };

    for (const [what, transaction, field] of [
      ['a NUL in status', { status: 'paid\u0000' }, 'data.status'],
      ['a NUL in a product name', { products: [{ ...line, productName: 'Wa\u0000ter' }] }, 'data.products[0].productName'],
      ['a lone surrogate in a product name', { products: [{ ...line, productName: 'Wa\ud800ter' }] }, 'data.products[0].productName'],
      ['a NUL in a field the contract does not show', { note: { text: 'a\u0000b' } }, 'data.note.text'],
      ['a NUL in a key', { ['k\u0000']: 1 }, 'data'],
      ['a line amount of 10^13', { products: [{ ...line, productPrice: 1e13 }] }, 'data.products[0]'],
      ['a quantity of 2^53', { products: [{ ...line, quantity: 2 ** 53 }] }, 'data.products[0]'],
      [
        'lines that add up past the bound',
        {
          products: [
            { ...line, productPrice: MAX_STORED_AMOUNT },
            { ...line, productPrice: 1 },
          ],
        },
        'data.products',
      ],
    ] as const) {
      it(`refuses ${what} with 400 naming ${field}, three times, and keeps nothing of it`, async () => {
        const transactionId = `s-${randomUUID().slice(0, 8)}`;
        for (let send = 1; send <= 3; send += 1) {
          const answer = await post({ transactionId, ...{ status: 'pending', products: [line] }, ...transaction });
          expect(answer.status, `send ${send}`).toBe(400);
          const { errors } = (await answer.json()) as { errors: { message: string } };
          expect(errors.message, `send ${send}`).toContain(field);
        }
        const read = await running.fetch(`${running.url}/graphql`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: TEST_KEY },
          body: JSON.stringify({ query: `{ transaction(id: "${transactionId}") { history { eventId } } }` }),
        });
        const body = (await read.json()) as { data?: { transaction: { history: unknown[] | null } | null } };
        expect(body.data?.transaction?.history ?? []).toEqual([]);
      });
    }

    it('keeps what is at the bound, and reads it back as sent', async () => {
      const transactionId = `max-${randomUUID().slice(0, 8)}`;
      const products = [{ productId: 'p1', productName: 'Wa😀ter', productPrice: MAX_STORED_AMOUNT, quantity: 1 }];
      expect((await post({ transactionId, status: 'paid', products })).status).toBe(200);
      const read = await running.fetch(`${running.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: TEST_KEY },
        body: JSON.stringify({
          query: `{ recentTransactions(first: 5) { nodes { transactionId status total products { productName lineTotal } } } }`,
        }),
      });
      const body = (await read.json()) as {
        data: { recentTransactions: { nodes: Array<{ transactionId: string; total: number; products: unknown[] }> } };
      };
      const node = body.data.recentTransactions.nodes.find((each) => each.transactionId === transactionId);
      expect(node).toMatchObject({
        status: 'paid',
        total: MAX_STORED_AMOUNT,
        products: [{ productName: 'Wa😀ter', lineTotal: MAX_STORED_AMOUNT }],
      });
    });
  });
}
