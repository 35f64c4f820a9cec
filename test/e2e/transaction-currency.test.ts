import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDemoData } from '../../src/backends/memory/demo-data.js';
import { buildWebhookRequest } from '../../src/events/webhook-request.js';
import { postGraphQL } from '../helpers/graphql-client.js';
import { startGateway, TEST_KEY, type RunningGateway } from '../helpers/gateway.js';
import { startStandInUpstream, type StandInUpstream } from '../helpers/stand-in-upstream.js';

/*
 * A transaction's currency when a webhook in the contract's shape names
 * neither a currency nor a vending: decided from the backend's own
 * transaction where that costs no call to the service (the memory backend),
 * else DEFAULT_CURRENCY; and `Transaction.currency` always says what the
 * history recorded, so the two never disagree for one transaction.
 */

const CURRENCY_OF = `query($id: ID!) {
  transaction(id: $id) { currency }
  recentTransactions(first: 50) { edges { node { transactionId currency } } }
  transactionStats { byCurrency { currency count } }
}`;

interface Answer {
  transaction: { currency: string } | null;
  recentTransactions: { edges: Array<{ node: { transactionId: string; currency: string } }> };
  transactionStats: { byCurrency: Array<{ currency: string; count: number }> };
}

async function postLegacy(
  url: string,
  transaction: Record<string, unknown> & { transactionId: string; status: string; products: never[] },
): Promise<void> {
  const request = buildWebhookRequest({ form: 'legacy', transaction });
  const response = await fetch(`${url}/webhooks`, { method: 'POST', headers: request.headers, body: request.body });
  expect(response.status).toBe(200);
}

async function currencies(
  url: string,
  id: string,
): Promise<{ transaction: string | undefined; history: string | undefined; counted: string[] }> {
  const { body } = await postGraphQL<Answer>(url, CURRENCY_OF, { variables: { id }, key: TEST_KEY });
  return {
    transaction: body.data?.transaction?.currency,
    history: body.data?.recentTransactions.edges.find((edge) => edge.node.transactionId === id)?.node.currency,
    counted: body.data?.transactionStats.byCurrency.map((entry) => entry.currency) ?? [],
  };
}

describe('the currency of a contract-shaped webhook on the memory backend', () => {
  let running: RunningGateway;
  beforeAll(async () => {
    running = await startGateway({ SIMULATOR: 'off' });
  });
  afterAll(() => running?.close());

  it('is the currency of the transaction the backend holds, in the history and on the transaction alike', async () => {
    const demo = createDemoData();
    const gbp = demo.transactions.find((transaction) => transaction.currencyCode === 'GBP')!;
    // Only what the contract shows: no currency, no vending.
    await postLegacy(running.url, { transactionId: gbp.transactionId, status: 'completed', products: gbp.products as never[] });
    expect(await currencies(running.url, gbp.transactionId)).toEqual({ transaction: 'GBP', history: 'GBP', counted: ['GBP'] });
  });
});

describe('the currency of a contract-shaped webhook in front of a REST service', () => {
  let upstream: StandInUpstream;
  let running: RunningGateway;
  beforeAll(async () => {
    upstream = await startStandInUpstream({ keys: ['gateway-own-key'] });
    running = await startGateway({
      BACKEND: 'rest',
      UPSTREAM_URL: upstream.url,
      UPSTREAM_API_KEY: 'gateway-own-key',
      API_KEYS: TEST_KEY,
      DEFAULT_CURRENCY: 'EUR',
    });
  });
  afterAll(async () => {
    await running?.close();
    await upstream?.close();
  });

  it('takes DEFAULT_CURRENCY without a call to the service, and the transaction read from the service says the same', async () => {
    const served = upstream.transactions[1]!;
    // The service links this one to a London machine (GBP), but the webhook does not say so.
    served.vendingId = upstream.vendings[2]!.vendingId;
    const id = served.transactionId as string;
    const before = upstream.callsTo('GET', '/transactions').length;
    await postLegacy(running.url, { transactionId: id, status: 'completed', products: served.products as never[] });
    expect(await currencies(running.url, id)).toEqual({ transaction: 'EUR', history: 'EUR', counted: ['EUR'] });
    // The webhook itself cost no read: the one read is the `transaction` query's.
    expect(upstream.callsTo('GET', '/transactions').length - before).toBe(1);
  });
});
