import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDemoData } from '../../src/backends/memory/demo-data.js';
import { startForwardGateway, startGateway, tuneUpstream, type RunningGateway } from '../helpers/gateway.js';
import { postGraphQL } from '../helpers/graphql-client.js';

/*
 * A gateway on the memory backend plays the upstream (it answers the contract's
 * REST paths); a second gateway in rest mode stands in front of it. Whatever a
 * REST client asks, both must answer alike.
 */
const UPSTREAM_KEY = 'upstream-client-key';
const demo = createDemoData();
const tx = demo.transactions[7]!;
const vm = demo.vendings[4]!;

let upstream: RunningGateway;
let gateway: RunningGateway;

beforeAll(async () => {
  upstream = await startGateway({ API_KEYS: UPSTREAM_KEY });
  gateway = await startForwardGateway(upstream.url, {}, {}, tuneUpstream({ retries: 0 }));
});
afterAll(async () => {
  await gateway.close();
  await upstream.close();
});

interface Probe {
  name: string;
  method?: string;
  path: string;
  key?: string | null;
  body?: string;
}

const probes: Probe[] = [
  { name: 'transaction', path: `/transactions/${tx.transactionId}` },
  { name: 'unknown transaction', path: '/transactions/00000000-0000-4000-8000-000000000000' },
  { name: 'vendings, default view', path: '/vendings' },
  { name: 'vendings, flat', path: '/vendings?products=flat' },
  { name: 'vendings, planogram', path: '/vendings?products=planogram' },
  { name: 'vendings, unknown view', path: '/vendings?products=mosaic' },
  { name: 'vending, flat', path: `/vendings/${vm.vendingId}?products=flat` },
  { name: 'vending, planogram', path: `/vendings/${vm.vendingId}?products=planogram` },
  { name: 'unknown vending', path: '/vendings/unknown' },
  { name: 'id needing escapes', path: '/vendings/a%20b%2Fc' },
  { name: 'bad key', path: '/vendings', key: 'not-a-key' },
  { name: 'no key', path: `/transactions/${tx.transactionId}`, key: null },
  {
    name: 'payment',
    method: 'PUT',
    path: `/transactions/${tx.transactionId}/payment`,
    body: '{"paymentStatus":"captured","amount":{"value":3.5}}',
  },
  { name: 'payment, unknown id', method: 'PUT', path: '/transactions/nope/payment', body: '{}' },
  { name: 'payment, bad key', method: 'PUT', path: `/transactions/${tx.transactionId}/payment`, body: '{}', key: 'wrong' },
  { name: 'payment, bad body', method: 'PUT', path: `/transactions/${tx.transactionId}/payment`, body: '[1,2,3]' },
  { name: 'payment, not JSON', method: 'PUT', path: `/transactions/${tx.transactionId}/payment`, body: '{oops' },
];

async function ask(base: string, probe: Probe): Promise<{ status: number; body: unknown }> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (probe.key !== null) headers.authorization = probe.key ?? UPSTREAM_KEY;
  const response = await fetch(base + probe.path, { method: probe.method ?? 'GET', headers, body: probe.body });
  return { status: response.status, body: await response.json() };
}

describe('REST through the gateway equals REST straight from the upstream', () => {
  it.each(probes)('$name', async (probe) => {
    const direct = await ask(upstream.url, probe);
    const through = await ask(gateway.url, probe);
    if (direct.status < 300) return void expect(through).toEqual(direct);
    // A refusal keeps its status and envelope; its words are the gateway's, never the upstream's (its text may carry secrets).
    expect(through.status).toBe(direct.status);
    expect(through.body).toEqual({ errors: { message: expect.any(String) } });
  });
});

describe('GraphQL in rest mode serves the upstream data', () => {
  it('reads the same vendings and transactions as the upstream holds', async () => {
    const { body } = await postGraphQL(
      gateway.url,
      `{
      vendings(products: PLANOGRAM) { totalCount nodes { vendingId identifier planogram } }
      transaction(id: "${tx.transactionId}") { transactionId status total products { productId quantity } }
    }`,
      { key: UPSTREAM_KEY },
    );
    expect(body.errors).toBeUndefined();
    expect(body.data!.vendings.totalCount).toBe(demo.vendings.length);
    const direct = (await ask(upstream.url, { name: '', path: '/vendings?products=planogram' })).body as {
      data: Array<{ products: unknown }>;
    };
    expect(body.data!.vendings.nodes.map((n: { planogram: unknown }) => n.planogram)).toEqual(direct.data.map((v) => v.products));
    expect(body.data!.transaction.products).toEqual(tx.products.map((p) => ({ productId: p.productId, quantity: p.quantity })));
  });

  it('forwards a bad key and reports the upstream refusal as UNAUTHENTICATED, HTTP 401', async () => {
    const response = await postGraphQL(gateway.url, `{ transaction(id: "${tx.transactionId}") { status } }`, { key: 'wrong' });
    expect(response.status).toBe(401);
    expect(response.body.data).toBeUndefined();
    expect(response.body.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
    expect(response.body.errors?.[0]?.message).not.toBe('Unknown API key');
  });

  it('updates a payment upstream and reads the transaction back', async () => {
    const target = demo.transactions[9]!;
    const { body } = await postGraphQL(
      gateway.url,
      `mutation { updateTransactionPayment(transactionId: "${target.transactionId}", payment: {wallet: "apple_pay"}) ` +
        `{ transaction { transactionId extra } } }`,
      { key: UPSTREAM_KEY },
    );
    expect(body.errors).toBeUndefined();
    // Beside the payment, what the demo's transactions carry beyond the contract: their machine and its currency.
    expect(body.data!.updateTransactionPayment.transaction).toEqual({
      transactionId: target.transactionId,
      extra: { payment: { wallet: 'apple_pay' }, vendingId: target.vendingId, currencyCode: target.currencyCode },
    });
  });
});
