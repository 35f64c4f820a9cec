import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { createDemoData } from '../../src/backends/memory/demo-data.js';
import { buildWebhookRequest, type WebhookForm } from '../../src/events/webhook-request.js';
import { countingBackend } from '../helpers/counting-backend.js';
import { demoBackend, startGateway, TEST_KEY, OTHER_KEY, type RunningGateway } from '../helpers/gateway.js';
import { postGraphQL } from '../helpers/graphql-client.js';
import { sseSubscribe } from '../helpers/sse-client.js';
import { waitFor } from '../helpers/wait-for.js';
import { subscribe, wsClient } from '../helpers/ws-client.js';

const demo = createDemoData();
const [txA, txB] = demo.transactions;
const backend = countingBackend(demoBackend());
let running: RunningGateway;

beforeAll(async () => {
  running = await startGateway({}, { backend });
});
afterAll(() => running.close());

const EVENT_FIELDS = `eventId type format receivedAt occurredAt transactionId status products { productId productName quantity }`;

async function postWebhook(form: WebhookForm, transaction: { transactionId: string; status: string; products: unknown[] }, id?: string) {
  const request = buildWebhookRequest({ form, transaction: transaction as never, id });
  const response = await fetch(`${running.url}/webhooks`, { method: 'POST', headers: request.headers, body: request.body });
  expect(response.status).toBe(200);
  expect(await response.text()).toBe('');
}

const untilSubscribed = (count: number) => waitFor(() => running.gateway.activeSubscriptions() === count);

describe('over graphql-ws', () => {
  it('delivers a legacy and an enveloped webhook with their fields', async () => {
    const client = wsClient(running.url, TEST_KEY);
    const before = running.gateway.activeSubscriptions();
    const sub = subscribe(client, `subscription { transactionUpdated { ${EVENT_FIELDS} } }`);
    expect(await untilSubscribed(before + 1)).toBe(true);

    await postWebhook('legacy', { transactionId: txA!.transactionId, status: 'pending', products: txA!.products });
    const legacy = (await sub.next()).data!.transactionUpdated;
    expect(legacy).toMatchObject({
      type: 'transaction.update',
      format: 'LEGACY',
      transactionId: txA!.transactionId,
      status: 'pending',
      occurredAt: null,
    });
    expect(legacy.eventId).toMatch(/^gw_/);
    expect(legacy.products).toEqual(
      txA!.products.map((p) => ({ productId: p.productId, productName: p.productName, quantity: p.quantity })),
    );
    expect(Date.parse(legacy.receivedAt)).toBeGreaterThan(Date.now() - 10_000);

    await postWebhook('enveloped', { transactionId: txB!.transactionId, status: 'completed', products: [] }, 'evt_ws_1');
    const enveloped = (await sub.next()).data!.transactionUpdated;
    expect(enveloped).toMatchObject({
      eventId: 'evt_ws_1',
      format: 'ENVELOPED',
      transactionId: txB!.transactionId,
      status: 'completed',
      products: [],
    });
    expect(enveloped.occurredAt).toEqual(expect.any(String));
    sub.unsubscribe();
    await client.dispose();
    expect(await untilSubscribed(before)).toBe(true);
  });

  it('delivers only the events of the transaction asked for', async () => {
    const client = wsClient(running.url, TEST_KEY);
    const before = running.gateway.activeSubscriptions();
    const sub = subscribe(client, 'subscription($id: ID) { transactionUpdated(transactionId: $id) { transactionId status } }', {
      id: txA!.transactionId,
    });
    expect(await untilSubscribed(before + 1)).toBe(true);
    await postWebhook('legacy', { transactionId: txB!.transactionId, status: 'x-other', products: [] });
    await postWebhook('legacy', { transactionId: txA!.transactionId, status: 'x-mine', products: [] });
    expect((await sub.next()).data).toEqual({ transactionUpdated: { transactionId: txA!.transactionId, status: 'x-mine' } });
    expect(sub.received).toHaveLength(1);
    sub.unsubscribe();
    await client.dispose();
    expect(await untilSubscribed(before)).toBe(true);
  });

  it('closes the socket with 4403 for a bad key', async () => {
    for (const params of [{ Authorization: 'wrong' }, {}]) {
      const socket = new WebSocket(`${running.url.replace('http', 'ws')}/graphql`, 'graphql-transport-ws');
      await new Promise((resolve) => socket.once('open', resolve));
      socket.send(JSON.stringify({ type: 'connection_init', payload: params }));
      const code = await new Promise<number>((resolve) => socket.once('close', (closeCode) => resolve(closeCode)));
      expect(code).toBe(4403);
    }
  });

  it('frees subscriptions on unsubscribe and on a closed socket', async () => {
    const baseline = running.gateway.activeSubscriptions();
    const client = wsClient(running.url, TEST_KEY);
    const subs = Array.from({ length: 5 }, () => subscribe(client, 'subscription { transactionUpdated { eventId } }'));
    expect(await untilSubscribed(baseline + 5)).toBe(true);
    subs.slice(0, 2).forEach((sub) => sub.unsubscribe());
    expect(await untilSubscribed(baseline + 3)).toBe(true);
    await client.dispose();
    expect(await untilSubscribed(baseline)).toBe(true);
  });
});

describe('over SSE', () => {
  it('delivers webhook events to a subscriber holding the key in its header', async () => {
    const before = running.gateway.activeSubscriptions();
    const sse = await sseSubscribe(running.url, `subscription { transactionUpdated { ${EVENT_FIELDS} } }`, TEST_KEY);
    expect(sse.status).toBe(200);
    expect(await untilSubscribed(before + 1)).toBe(true);
    await postWebhook('enveloped', { transactionId: txA!.transactionId, status: 'sse-1', products: [] }, 'evt_sse_1');
    expect((await sse.next()).data.transactionUpdated).toMatchObject({ eventId: 'evt_sse_1', format: 'ENVELOPED', status: 'sse-1' });
    await postWebhook('legacy', { transactionId: txB!.transactionId, status: 'sse-2', products: [] });
    expect((await sse.next()).data.transactionUpdated).toMatchObject({
      format: 'LEGACY',
      status: 'sse-2',
      transactionId: txB!.transactionId,
    });
    sse.close();
    expect(await untilSubscribed(before)).toBe(true);
  });

  it('answers 401 without a valid key', async () => {
    const sse = await sseSubscribe(running.url, 'subscription { transactionUpdated { eventId } }', 'wrong');
    expect(sse.status).toBe(401);
    sse.close();
  });
});

describe("the event's transaction", () => {
  it('is read once per event and key, however many subscribers select it', async () => {
    const target = demo.transactions[12]!;
    const before = running.gateway.activeSubscriptions();
    const clients = [wsClient(running.url, TEST_KEY), wsClient(running.url, TEST_KEY)];
    const subs = Array.from({ length: 50 }, (_, i) =>
      subscribe(clients[i % 2]!, 'subscription { transactionUpdated { eventId transaction { transactionId customerId } } }'),
    );
    const other = wsClient(running.url, OTHER_KEY);
    const otherSub = subscribe(other, 'subscription { transactionUpdated { transaction { customerId } } }');
    expect(await untilSubscribed(before + 51)).toBe(true);

    const reads = backend.callsTo('getTransaction').length;
    await postWebhook('enveloped', { transactionId: target.transactionId, status: 'completed', products: target.products }, 'evt_fanout');
    const results = await Promise.all(subs.map((sub) => sub.next()));
    for (const result of results) {
      expect(result.data!.transactionUpdated.transaction).toEqual({ transactionId: target.transactionId, customerId: target.customerId });
    }
    expect((await otherSub.next()).data!.transactionUpdated.transaction.customerId).toBe(target.customerId);
    // One read for TEST_KEY's 50 subscribers, one for OTHER_KEY's.
    expect(backend.callsTo('getTransaction').length - reads).toBe(2);
    await Promise.all([...clients, other].map(async (client) => client.dispose()));
    expect(await untilSubscribed(before)).toBe(true);
  });

  it('is refreshed by the event, so a later query sees the new status', async () => {
    const target = demo.transactions[14]!;
    await postWebhook('legacy', { transactionId: target.transactionId, status: 'refunded-by-webhook', products: target.products });
    // The refresh follows the 200 (publishing waits for nobody): give it a moment.
    await new Promise((resolve) => setTimeout(resolve, 50));
    const { body } = await postGraphQL(running.url, `{ transaction(id: "${target.transactionId}") { status } }`);
    expect(body.data).toEqual({ transaction: { status: 'refunded-by-webhook' } });
  });
});

describe('events of the memory backend', () => {
  it('a payment update emits transaction.update as the service would', async () => {
    const target = demo.transactions[20]!;
    const client = wsClient(running.url, TEST_KEY);
    const before = running.gateway.activeSubscriptions();
    const sub = subscribe(
      client,
      'subscription($id: ID) { transactionUpdated(transactionId: $id) { format transactionId transaction { extra } } }',
      { id: target.transactionId },
    );
    expect(await untilSubscribed(before + 1)).toBe(true);
    const mutation = await postGraphQL(
      running.url,
      `mutation { updateTransactionPayment(transactionId: "${target.transactionId}", payment: {wallet: "apple_pay"}) ` +
        `{ transaction { transactionId } } }`,
    );
    expect(mutation.body.errors).toBeUndefined();
    const event = (await sub.next()).data!.transactionUpdated;
    expect(event).toMatchObject({ format: 'ENVELOPED', transactionId: target.transactionId });
    // Beside the payment, what the demo's transactions carry beyond the contract: their machine and its currency.
    expect(event.transaction.extra).toEqual({
      payment: { wallet: 'apple_pay' },
      vendingId: target.vendingId,
      currencyCode: target.currencyCode,
    });
    await client.dispose();
    expect(await untilSubscribed(before)).toBe(true);
  });
});

describe('execute once per event', () => {
  it('runs one execution for subscribers with the same document, variables and key; one each otherwise', async () => {
    for (const sharing of ['on', 'off']) {
      const gw = await startGateway({}, { fastPaths: { subscriptionSharing: sharing === 'on' } });
      const clients = [wsClient(gw.url, TEST_KEY), wsClient(gw.url, TEST_KEY), wsClient(gw.url, OTHER_KEY)];
      const query = 'subscription { transactionUpdated { eventId status } }';
      const same = Array.from({ length: 6 }, (_, i) => subscribe(clients[i % 2]!, query));
      const otherKey = subscribe(clients[2]!, query);
      const otherDocument = subscribe(clients[0]!, 'subscription { transactionUpdated { eventId } }');
      expect(await waitFor(() => gw.gateway.activeSubscriptions() === 8)).toBe(true);
      expect(gw.gateway.bus.activeSubscriptions()).toBe(sharing === 'on' ? 3 : 8);

      const request = buildWebhookRequest({
        form: 'enveloped',
        transaction: { transactionId: 't', status: 'shared', products: [] },
        id: `share-${sharing}`,
      });
      await fetch(`${gw.url}/webhooks`, { method: 'POST', headers: request.headers, body: request.body });
      for (const sub of [...same, otherKey])
        expect((await sub.next()).data).toEqual({ transactionUpdated: { eventId: `share-${sharing}`, status: 'shared' } });
      expect((await otherDocument.next()).data).toEqual({ transactionUpdated: { eventId: `share-${sharing}` } });

      same.slice(0, 5).forEach((sub) => sub.unsubscribe());
      expect(await waitFor(() => gw.gateway.activeSubscriptions() === 3)).toBe(true);
      expect(gw.gateway.bus.activeSubscriptions()).toBe(3);
      await Promise.all(clients.map(async (client) => client.dispose()));
      expect(await waitFor(() => gw.gateway.activeSubscriptions() === 0 && gw.gateway.bus.activeSubscriptions() === 0)).toBe(true);
      await gw.close();
    }
  });
});
