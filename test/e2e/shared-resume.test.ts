import { afterEach, describe, expect, it } from 'vitest';
import { buildWebhookRequest } from '../../src/events/webhook-request.js';
import { startGateway, TEST_KEY, type RunningGateway } from '../helpers/gateway.js';
import { subscribe, wsClient, type QueuedSubscription } from '../helpers/ws-client.js';
import type { Client } from 'graphql-ws';

/*
 * Subscribers with the same document and variables share
 * one execution ("Execute once per event"), but a subscriber resuming with
 * `after` must get the replay whoever else resumed from the same point first.
 */

type Update = { transactionUpdated: { eventId: string; status: string } };

let running: RunningGateway | undefined;
const clients: Client[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map(async (client) => client.dispose()));
  await running?.close();
  running = undefined;
});

async function post(url: string, status: string, id: string): Promise<void> {
  const request = buildWebhookRequest({ form: 'enveloped', transaction: { transactionId: 'shared-resume-tx', status, products: [] }, id });
  const response = await fetch(`${url}/webhooks`, { method: 'POST', headers: request.headers, body: request.body });
  expect(response.status).toBe(200);
}

const statusesOf = (subscription: QueuedSubscription<Update>) =>
  subscription.received.map((result) => result.data?.transactionUpdated.status);

async function take(subscription: QueuedSubscription<Update>, count: number): Promise<void> {
  for (let i = 0; i < count; i++) await subscription.next(3_000);
}

describe.each([
  [
    'by variable',
    'subscription Resume($after: ID) { transactionUpdated(after: $after) { eventId status } }',
    (after: string) => ({ after }),
  ],
  ['literally', '', undefined],
])('two graphql-ws clients resuming from the same event (after given %s)', (_how, variableDocument, variablesOf) => {
  it('both get the replay, then live events', async () => {
    running = await startGateway();
    const { url } = running;
    const watcher = wsClient(url, TEST_KEY);
    clients.push(watcher);
    const live = subscribe<Update>(watcher, 'subscription { transactionUpdated { eventId status } }');
    // The subscription exists once the gateway counts it.
    for (let i = 0; i < 200 && running.gateway.activeSubscriptions() < 1; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    for (const [n, status] of ['one', 'two', 'three'].entries()) await post(url, status, `shared-resume-${n}`);
    await take(live, 3);
    const after = live.received[0]!.data!.transactionUpdated.eventId;

    const document = variablesOf
      ? variableDocument
      : `subscription { transactionUpdated(after: ${JSON.stringify(after)}) { eventId status } }`;
    const variables = variablesOf?.(after);
    const resumers = [wsClient(url, TEST_KEY), wsClient(url, TEST_KEY)];
    clients.push(...resumers);
    // The second resumes once the first has had its replay.
    const first = subscribe<Update>(resumers[0]!, document, variables);
    await take(first, 2);
    const second = subscribe<Update>(resumers[1]!, document, variables);
    await take(second, 2).catch(() => {});
    await post(url, 'four', 'shared-resume-3');
    await take(first, 1);
    await take(second, 1).catch(() => {});

    expect(statusesOf(first)).toEqual(['two', 'three', 'four']);
    expect(statusesOf(second)).toEqual(['two', 'three', 'four']);
  });
});
