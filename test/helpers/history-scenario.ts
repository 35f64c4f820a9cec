import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import { buildWebhookRequest, type WebhookRequest } from '../../src/events/webhook-request.js';
import {
  RecentTransactionsDocument,
  TransactionHistoryDocument,
  TransactionStatsDocument,
} from '../../src/graphql/generated/operations.js';
import { TEST_KEY, type RunningGateway } from './gateway.js';
import { postGraphQL } from './graphql-client.js';
import { runOperation } from './typed-client.js';
import type { ProductLine } from '../../src/contract/contract.js';

/*
 * One series of webhooks as the service (and its retries) could send it —
 * redeliveries, an event that arrives after a later one, a status that
 * flip-flops — and what the history must then say, on every instance given.
 * `post` chooses which instance receives each webhook.
 */

export type Poster = (request: WebhookRequest, index?: number) => Promise<number>;

const legacy = (transaction: Record<string, unknown>): WebhookRequest => ({
  body: JSON.stringify({ event: 'transaction', data: transaction }),
  headers: { 'content-type': 'application/json' },
});

/** `settle` resolves once the history applied what the gateways admitted (a store fed after the webhook's answer). */
export async function historyScenario(
  gateways: RunningGateway[],
  post: Poster,
  settle: () => Promise<void> = async () => {},
): Promise<void> {
  const run = randomUUID().slice(0, 8);
  const [pending, completed, failed] = ['pending', 'completed', 'failed'].map((s) => `${s}-${run}`) as [string, string, string];
  const ids = { a: `a-${run}`, b: `b-${run}`, c: `c-${run}` };
  const line = (product: string, price: number, quantity: number) => ({
    productId: `${product}-${run}`,
    productName: product,
    productPrice: price,
    quantity,
  });
  const tx = (id: string, status: string, products: ProductLine[]) => ({ transactionId: id, status, products });
  const t0 = new Date(Math.floor(Date.now() / 1000) * 1000 - 600_000);
  const at = (seconds: number) => new Date(t0.getTime() + seconds * 1000);
  const aProducts = [line('water', 1.5, 2)];
  const bProducts = [line('crisps', 2, 1)];
  const enveloped = (status: string, id: string, seconds: number) =>
    buildWebhookRequest({ form: 'enveloped', transaction: tx(ids.a, status, aProducts), id, at: at(seconds) });

  const series: WebhookRequest[] = [
    enveloped(pending, `a1-${run}`, 0),
    enveloped(completed, `a2-${run}`, 2),
    enveloped(pending, `a1-${run}`, 0), // redelivered
    enveloped(pending, `a3-${run}`, 1), // late: older than a2, must not win
    legacy(tx(ids.b, pending, bProducts)),
    legacy(tx(ids.b, completed, bProducts)),
    legacy(tx(ids.b, pending, bProducts)), // the status comes back: a new event
    legacy(tx(ids.b, pending, bProducts)), // the same again: a redelivery
    buildWebhookRequest({ form: 'enveloped', transaction: tx(ids.c, failed, [line('cola', 5, 1)]) }),
  ];
  for (const [index, request] of series.entries()) expect(await post(request, index)).toBe(200);
  await settle();

  // Payment updates through the gateway, one by GraphQL on the first instance, one by REST on the last.
  // (The memory backend learns of a webhook's transaction from the event, which may still be on its way.)
  const first = gateways[0]!;
  const last = gateways.at(-1)!;
  const mutation =
    'mutation($id: ID!) { updateTransactionPayment(transactionId: $id, payment: { status: "paid", method: "card" }) ' +
    '{ transaction { transactionId } } }';
  expect(await eventually(async () => !(await postGraphQL(first.url, mutation, { variables: { id: ids.a } })).body.errors)).toBe(true);
  const rest = () =>
    fetch(`${last.url}/transactions/${ids.b}/payment`, {
      method: 'PUT',
      headers: { authorization: TEST_KEY, 'content-type': 'application/json' },
      body: '{"status":"paid"}',
    });
  expect(await eventually(async () => (await rest()).status === 200)).toBe(true);

  const answers: unknown[] = [];
  for (const gateway of gateways) {
    const recent = await runOperation(gateway.url, RecentTransactionsDocument, { status: [pending, completed, failed] });
    expect(recent.errors).toBeUndefined();
    const page = recent.data!.recentTransactions;
    expect(page.edges.map((e) => [e.node.transactionId, e.node.status])).toEqual([
      [ids.b, pending],
      [ids.a, completed],
      [ids.c, failed],
    ]);
    expect(page.totalCount).toBe(3);
    expect(page.edges[1]!.node.firstSeen).toBe(t0.toISOString());

    const a = (await runOperation(gateway.url, TransactionHistoryDocument, { id: ids.a })).data!.transaction!;
    expect(a.history).toEqual([
      { status: pending, at: t0.toISOString(), eventId: `a1-${run}` },
      { status: completed, at: at(2).toISOString(), eventId: `a2-${run}` },
    ]);
    expect(a.paymentUpdates?.map((p) => p.fields)).toEqual([['method', 'status']]);
    const b = (await runOperation(gateway.url, TransactionHistoryDocument, { id: ids.b })).data!.transaction!;
    expect(b.history?.map((change) => change.status)).toEqual([pending, completed, pending]);
    expect(b.paymentUpdates?.map((p) => p.fields)).toEqual([['status']]);

    const stats = await runOperation(gateway.url, TransactionStatsDocument, {
      since: at(-3600).toISOString(),
      until: new Date(Date.now() + 60_000).toISOString(),
      interval: 'HOUR',
    });
    expect(stats.errors).toBeUndefined();
    // The scenario's webhooks name no currency: all of it is in DEFAULT_CURRENCY, read per currency as every client should.
    const [inDefault, ...others] = stats.data!.transactionStats.byCurrency.filter((entry) =>
      entry.byStatus.some((s) => s.status.endsWith(run)),
    );
    expect(others).toEqual([]);
    expect(inDefault!.currency).toBe('EUR');
    const ours = inDefault!.byStatus.filter((s) => s.status.endsWith(run)).sort((x, y) => x.status.localeCompare(y.status));
    expect(ours).toEqual([
      { status: completed, count: 1, total: 3 },
      { status: failed, count: 1, total: 5 },
      { status: pending, count: 1, total: 2 },
    ]);
    const water = inDefault!.topProductsByQuantity.concat(inDefault!.topProductsByAmount).find((p) => p.productId === `water-${run}`);
    expect(water).toMatchObject({ productName: 'water', quantity: 2, amount: 3 });
    answers.push({ page: page.edges.map((e) => e.node), a, b });
  }
  // Every instance says the same.
  for (const answer of answers.slice(1)) expect(answer).toEqual(answers[0]);
}

/** Tries `attempt` until it succeeds, for up to two seconds. */
async function eventually(attempt: () => Promise<boolean>): Promise<boolean> {
  for (const deadline = Date.now() + 2_000; Date.now() < deadline; await new Promise((resolve) => setTimeout(resolve, 20))) {
    if (await attempt()) return true;
  }
  return false;
}
