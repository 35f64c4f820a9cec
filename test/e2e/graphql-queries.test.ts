import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDemoData } from '../../src/backends/memory/demo-data.js';
import { countingBackend } from '../helpers/counting-backend.js';
import { demoBackend, answeringGateway, type RunningGateway } from '../helpers/gateway.js';
import { codesOf, postGraphQL, type GraphQLResponse } from '../helpers/graphql-client.js';
import { clientCredential } from '../helpers/credentials.js';

const demo = createDemoData();
const [tx0, tx1, tx2] = demo.transactions;
const [vm0, vm1] = demo.vendings;

let running: RunningGateway;
const backend = countingBackend(demoBackend());

beforeAll(async () => {
  running = await answeringGateway({}, { backend });
});
afterAll(() => running.close());

/** Runs a query and returns how many backend calls it made. */
async function callsDuring(run: () => Promise<unknown>): Promise<typeof backend.calls> {
  const before = backend.calls.length;
  await run();
  return backend.calls.slice(before);
}

describe('transaction', () => {
  it('reads one transaction with its product lines and computed totals', async () => {
    const { status, body } = await postGraphQL(
      running,
      `query($id: ID!) { transaction(id: $id) {
      transactionId customerId status total products { ` +
        `productId productName productPrice productThumbnail productSku quantity lineTotal } } }`,
      { variables: { id: tx0!.transactionId } },
    );
    expect(status).toBe(200);
    expect(body.errors).toBeUndefined();
    const tx = body.data!.transaction;
    expect(tx.transactionId).toBe(tx0!.transactionId);
    expect(tx.customerId).toBe(tx0!.customerId);
    expect(tx.status).toBe('active');
    expect(tx.products).toHaveLength(tx0!.products.length);
    const first = tx0!.products[0]!;
    expect(tx.products[0]).toMatchObject({
      productId: first.productId,
      productName: first.productName,
      productSku: first.productSku,
      quantity: first.quantity,
    });
    expect(tx.products[0].lineTotal).toBeCloseTo(first.productPrice! * first.quantity!, 10);
    const expectedTotal = tx0!.products.reduce((sum, p) => sum + p.productPrice! * p.quantity!, 0);
    expect(tx.total).toBeCloseTo(expectedTotal, 10);
  });

  it('gives null and NOT_FOUND for an unknown id, without failing the rest of the query', async () => {
    const response = await postGraphQL(
      running,
      `{ missing: transaction(id: "no-such-id") { transactionId } known: transaction(id: "${tx1!.transactionId}") { transactionId } }`,
    );
    expect(response.status).toBe(200);
    expect(response.body.data).toEqual({ missing: null, known: { transactionId: tx1!.transactionId } });
    expect(codesOf(response)).toEqual(['NOT_FOUND']);
    expect(response.body.errors![0]!.path).toEqual(['missing']);
  });

  it('reads a repeated id under several aliases from the backend once', async () => {
    const id = tx2!.transactionId;
    const calls = await callsDuring(() =>
      postGraphQL(
        running,
        `{ a: transaction(id: "${id}") { status } b: transaction(id: "${id}") { total } ` +
          `c: transactions(ids: ["${id}", "${id}"]) { transactionId } }`,
      ),
    );
    expect(calls.filter((c) => c.method === 'getTransaction')).toHaveLength(1);
  });

  it('keeps the order of transactions(ids) with null where unknown', async () => {
    const ids = [tx2!.transactionId, 'unknown-1', tx0!.transactionId, tx2!.transactionId];
    const { body } = await postGraphQL(running, `query($ids: [ID!]!) { transactions(ids: $ids) { transactionId } }`, {
      variables: { ids },
    });
    expect(body.errors).toBeUndefined();
    expect(body.data!.transactions).toEqual([{ transactionId: ids[0] }, null, { transactionId: ids[2] }, { transactionId: ids[3] }]);
  });

  it('rejects an empty id and too many ids as BAD_USER_INPUT', async () => {
    expect(codesOf(await postGraphQL(running, '{ transaction(id: "") { status } }'))).toEqual(['BAD_USER_INPUT']);
    const many = Array.from({ length: 501 }, (_, i) => `id-${i}`);
    const response = await postGraphQL(running, 'query($ids: [ID!]!) { transactions(ids: $ids) { status } }', {
      variables: { ids: many },
    });
    expect(codesOf(response)).toEqual(['BAD_USER_INPUT']);
  });
});

describe('vending', () => {
  it('reads one vending in the flat view by default', async () => {
    const { body } = await postGraphQL(
      running,
      `{ vending(id: "${vm0!.vendingId}") {
      vendingId status online enabled address building countryCode currencyCode identifier posId planogram
      products { productId productName productPrice quantity } } }`,
    );
    expect(body.errors).toBeUndefined();
    const vending = body.data!.vending;
    expect(vending).toMatchObject({
      vendingId: vm0!.vendingId,
      status: vm0!.status,
      online: vm0!.online,
      enabled: vm0!.enabled,
      address: vm0!.address,
      building: vm0!.building,
      countryCode: vm0!.countryCode,
      currencyCode: vm0!.currencyCode,
      identifier: vm0!.identifier,
      posId: vm0!.posId,
      planogram: null,
    });
    expect(vending.products).toHaveLength(vm0!.slots.length);
    expect(vending.products[0]).toEqual({
      productId: vm0!.slots[0]!.product.productId,
      productName: vm0!.slots[0]!.product.productName,
      productPrice: vm0!.slots[0]!.product.productPrice,
      quantity: vm0!.slots[0]!.product.quantity,
    });
  });

  it('carries the planogram as the backend sent it in the PLANOGRAM view', async () => {
    const { body } = await postGraphQL(
      running,
      `{ vending(id: "${vm1!.vendingId}", products: PLANOGRAM) { products { productId } planogram } }`,
    );
    expect(body.errors).toBeUndefined();
    expect(body.data!.vending.products).toBeNull();
    const direct = await backend.getVending(vm1!.vendingId, { products: 'planogram' }, clientCredential('x'));
    expect(body.data!.vending.planogram).toEqual(direct.products);
  });

  it('gives null and NOT_FOUND for an unknown vending', async () => {
    const response = await postGraphQL(running, '{ vending(id: "nope") { vendingId } }');
    expect(response.body.data).toEqual({ vending: null });
    expect(codesOf(response)).toEqual(['NOT_FOUND']);
  });

  it('lists every vending with a count, nodes and edges that agree', async () => {
    const { body } = await postGraphQL(
      running,
      '{ vendings { totalCount nodes { vendingId } edges { cursor node { vendingId } } ' +
        'pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } }',
    );
    expect(body.errors).toBeUndefined();
    const page = body.data!.vendings;
    expect(page.totalCount).toBe(demo.vendings.length);
    expect(page.nodes.map((n: { vendingId: string }) => n.vendingId)).toEqual(demo.vendings.map((v) => v.vendingId));
    expect(page.edges.map((e: { node: unknown }) => e.node)).toEqual(page.nodes);
    expect(page.pageInfo).toMatchObject({
      hasNextPage: false,
      hasPreviousPage: false,
      startCursor: page.edges[0].cursor,
      endCursor: page.edges.at(-1).cursor,
    });
  });

  it('pages with first and after through the whole list without gaps or repeats', async () => {
    const seen: string[] = [];
    let after: string | null = null;
    for (let guard = 0; guard < 10; guard++) {
      const response: GraphQLResponse<any> = await postGraphQL(
        running,
        'query($after: String) { vendings(first: 3, after: $after) { totalCount nodes { vendingId } ' +
          'pageInfo { hasNextPage endCursor hasPreviousPage } } }',
        { variables: { after } },
      );
      const page = response.body.data!.vendings;
      expect(page.nodes.length).toBeLessThanOrEqual(3);
      expect(page.pageInfo.hasPreviousPage).toBe(after !== null);
      seen.push(...page.nodes.map((n: { vendingId: string }) => n.vendingId));
      if (!page.pageInfo.hasNextPage) break;
      after = page.pageInfo.endCursor;
    }
    expect(seen).toEqual(demo.vendings.map((v) => v.vendingId));
  });

  it('filters on online, enabled, status and countryCode', async () => {
    const query =
      'query($filter: VendingFilter) { vendings(filter: $filter) { totalCount nodes { vendingId online enabled status countryCode } } }';
    const cases = [
      { filter: { online: true }, expected: demo.vendings.filter((v) => v.online) },
      { filter: { enabled: false }, expected: demo.vendings.filter((v) => !v.enabled) },
      { filter: { status: 'maintenance' }, expected: demo.vendings.filter((v) => v.status === 'maintenance') },
      { filter: { countryCode: 'gb', online: true }, expected: demo.vendings.filter((v) => v.countryCode === 'GB' && v.online) },
    ];
    for (const { filter, expected } of cases) {
      expect(expected.length).toBeGreaterThan(0);
      const { body } = await postGraphQL(running, query, { variables: { filter } });
      expect(body.data!.vendings.totalCount).toBe(expected.length);
      expect(body.data!.vendings.nodes.map((n: { vendingId: string }) => n.vendingId)).toEqual(expected.map((v) => v.vendingId));
    }
  });

  it('rejects a bad cursor and a negative page size as BAD_USER_INPUT', async () => {
    expect(codesOf(await postGraphQL(running, '{ vendings(after: "bogus") { totalCount } }'))).toEqual(['BAD_USER_INPUT']);
    expect(codesOf(await postGraphQL(running, '{ vendings(first: -1) { totalCount } }'))).toEqual(['BAD_USER_INPUT']);
  });

  it('serves vending(id) aliases after a vendings list from what the list read', async () => {
    const ids = demo.vendings.slice(0, 5).map((v) => v.vendingId);
    const aliases = ids.map((id, i) => `v${i}: vending(id: "${id}") { identifier }`).join(' ');
    const calls = await callsDuring(() => postGraphQL(running, `{ vendings { totalCount } ${aliases} }`));
    expect(calls.length).toBeLessThanOrEqual(2);
    expect(calls.filter((c) => c.method === 'getVending')).toHaveLength(0);
  });
});

describe('updateTransactionPayment', () => {
  it('stores the payment and returns the transaction read back', async () => {
    const id = tx1!.transactionId;
    const payment = { status: 'paid', method: 'apple_pay', customer: { email: 'ana@example.com' } };
    const calls = await callsDuring(async () => {
      const { body } = await postGraphQL(
        running,
        `mutation($id: ID!, $payment: JSONObject!) { updateTransactionPayment(transactionId: $id, payment: $payment) ` +
          `{ transaction { transactionId status extra } } }`,
        { variables: { id, payment } },
      );
      expect(body.errors).toBeUndefined();
      // The demo's transactions carry their machine and its currency, fields the contract does not show (kept as `extra`).
      expect(body.data!.updateTransactionPayment.transaction).toEqual({
        transactionId: id,
        status: tx1!.status,
        extra: { payment, vendingId: tx1!.vendingId, currencyCode: tx1!.currencyCode },
      });
    });
    expect(calls.map((c) => c.method)).toEqual(['updatePayment', 'getTransaction']);
    const stored = await backend.getTransaction(id, clientCredential('x'));
    expect(stored.payment).toEqual(payment);
  });

  it('fails with NOT_FOUND for an unknown transaction and BAD_USER_INPUT for a non-object payment', async () => {
    const unknown = await postGraphQL(
      running,
      'mutation { updateTransactionPayment(transactionId: "nope", payment: {status: "paid"}) { transaction { status } } }',
    );
    expect(unknown.body.data).toBeNull();
    expect(codesOf(unknown)).toEqual(['NOT_FOUND']);
    const notObject = await postGraphQL(
      running,
      'mutation($p: JSONObject!) { updateTransactionPayment(transactionId: "x", payment: $p) { transaction { status } } }',
      { variables: { p: [1, 2] } },
    );
    expect(notObject.body.errors?.length).toBe(1);
    expect(notObject.body.data ?? null).toBeNull();
  });
});

describe('authentication', () => {
  it('answers 401 with UNAUTHENTICATED for a missing or unknown key', async () => {
    for (const key of [null, 'wrong-key', '']) {
      const response = await postGraphQL(running, '{ vendings { totalCount } }', { key });
      expect(response.status).toBe(401);
      expect(codesOf(response)).toEqual(['UNAUTHENTICATED']);
      expect(response.body.data ?? null).toBeNull();
    }
  });

  it('accepts the key with or without a Bearer prefix', async () => {
    for (const key of ['test-key-1', 'Bearer test-key-1', 'bearer test-key-2']) {
      const response = await postGraphQL(running, '{ vendings { totalCount } }', { key });
      expect(response.status).toBe(200);
      expect(response.body.data).toEqual({ vendings: { totalCount: demo.vendings.length } });
    }
  });
});
