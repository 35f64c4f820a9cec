import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDemoData } from '../../src/backends/memory/demo-data.js';
import { buildWebhookRequest } from '../../src/events/webhook-request.js';
import {
  FleetOverviewDocument,
  LiveTransactionDocument,
  LiveTransactionsDocument,
  ResumeTransactionsDocument,
  TransactionDetailDocument,
  TransactionsBatchDocument,
  UpdateTransactionPaymentDocument,
  VendingDetailDocument,
  VendingPlanogramDocument,
} from '../../src/graphql/generated/operations.js';
import { startGateway, TEST_KEY, type RunningGateway } from '../helpers/gateway.js';
import { runOperation, subscribeOperation } from '../helpers/typed-client.js';
import { waitFor } from '../helpers/wait-for.js';
import { wsClient } from '../helpers/ws-client.js';

/*
 * Every operation of schema/operations/, run through its generated typed
 * document against a real gateway: what a dashboard built on them would see.
 */
const demo = createDemoData();
let running: RunningGateway;

beforeAll(async () => {
  running = await startGateway();
});
afterAll(() => running.close());

async function webhook(transactionId: string, status: string, id?: string): Promise<void> {
  const request = buildWebhookRequest({ form: 'enveloped', transaction: { transactionId, status, products: [] }, id });
  const response = await fetch(`${running.url}/webhooks`, { method: 'POST', headers: request.headers, body: request.body });
  expect(response.status).toBe(200);
}

describe('queries', () => {
  it('FleetOverview: every machine with its state and product count, paged', async () => {
    const all = await runOperation(running.url, FleetOverviewDocument, {});
    expect(all.errors).toBeUndefined();
    expect(all.data!.vendings.totalCount).toBe(demo.vendings.length);
    const first = all.data!.vendings.nodes[0]!;
    const machine = demo.vendings[0]!;
    expect(first).toEqual({
      id: machine.vendingId,
      vendingId: machine.vendingId,
      identifier: machine.identifier,
      status: machine.status,
      online: machine.online,
      enabled: machine.enabled,
      countryCode: machine.countryCode,
      currencyCode: machine.currencyCode,
      address: machine.address,
      building: machine.building,
      productCount: machine.slots.length,
      offlineSince: null,
    });
    const page = await runOperation(running.url, FleetOverviewDocument, { filter: { online: true }, first: 2 });
    expect(page.data!.vendings.nodes).toHaveLength(2);
    expect(page.data!.vendings.pageInfo.hasNextPage).toBe(true);
    const next = await runOperation(running.url, FleetOverviewDocument, {
      filter: { online: true },
      first: 2,
      after: page.data!.vendings.pageInfo.endCursor,
    });
    expect(next.data!.vendings.nodes[0]!.vendingId).not.toBe(page.data!.vendings.nodes[1]!.vendingId);
  });

  it('VendingDetail and VendingPlanogram: both views of one machine', async () => {
    const machine = demo.vendings[3]!;
    const flat = await runOperation(running.url, VendingDetailDocument, { id: machine.vendingId });
    expect(flat.data!.vending!.products!.map((p) => p.productId)).toEqual(machine.slots.map((s) => s.product.productId));
    expect(flat.data!.vending!.products![0]!.lineTotal).toBeCloseTo(
      machine.slots[0]!.product.productPrice! * machine.slots[0]!.product.quantity!,
      10,
    );
    const planogram = await runOperation(running.url, VendingPlanogramDocument, { id: machine.vendingId });
    expect(planogram.data!.vending!.planogram).toMatchObject({ trays: expect.any(Array) });
  });

  it('TransactionDetail and TransactionsBatch: totals, order kept, null where unknown', async () => {
    const [a, b] = demo.transactions;
    const detail = await runOperation(running.url, TransactionDetailDocument, { id: a!.transactionId });
    expect(detail.data!.transaction).toMatchObject({ transactionId: a!.transactionId, customerId: a!.customerId, status: a!.status });
    expect(detail.data!.transaction!.total).toBeCloseTo(
      a!.products.reduce((sum, p) => sum + p.productPrice! * p.quantity!, 0),
      10,
    );
    const batch = await runOperation(running.url, TransactionsBatchDocument, { ids: [b!.transactionId, 'unknown', a!.transactionId] });
    expect(batch.data!.transactions.map((t) => t?.transactionId ?? null)).toEqual([b!.transactionId, null, a!.transactionId]);
  });
});

describe('mutation', () => {
  it('UpdateTransactionPayment: stores the payment and reads the transaction back', async () => {
    const target = demo.transactions[6]!;
    const result = await runOperation(running.url, UpdateTransactionPaymentDocument, {
      transactionId: target.transactionId,
      payment: { paymentStatus: 'captured' },
    });
    expect(result.errors).toBeUndefined();
    expect(result.data!.updateTransactionPayment.transaction).toMatchObject({
      transactionId: target.transactionId,
      extra: { payment: { paymentStatus: 'captured' } },
    });
  });
});

describe('subscriptions', () => {
  it('LiveTransactions, LiveTransaction and ResumeTransactions deliver what they promise', async () => {
    const [a, b] = demo.transactions;
    const client = wsClient(running.url, TEST_KEY);
    const bus = running.gateway;
    const baseline = bus.activeSubscriptions();
    const all = subscribeOperation(client, LiveTransactionsDocument, {});
    const one = subscribeOperation(client, LiveTransactionDocument, { transactionId: b!.transactionId });
    expect(await waitFor(() => bus.activeSubscriptions() === baseline + 2)).toBe(true);

    await webhook(a!.transactionId, 'pending', 'dash-1');
    await webhook(b!.transactionId, 'completed', 'dash-2');
    const firstAll = (await all.next()).data!.transactionUpdated;
    expect(firstAll).toMatchObject({
      eventId: 'dash-1',
      format: 'ENVELOPED',
      status: 'pending',
      transaction: { customerId: a!.customerId },
    });
    expect((await all.next()).data!.transactionUpdated.eventId).toBe('dash-2');
    expect((await one.next()).data!.transactionUpdated).toMatchObject({ eventId: 'dash-2', transactionId: b!.transactionId });

    const resumed = subscribeOperation(client, ResumeTransactionsDocument, { after: 'dash-1' });
    expect((await resumed.next()).data!.transactionUpdated.eventId).toBe('dash-2');
    await client.dispose();
  });
});
