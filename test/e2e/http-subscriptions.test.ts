import { randomUUID } from 'node:crypto';
import { ApolloClient, HttpLink, InMemoryCache } from '@apollo/client';
import { parse } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildWebhookRequest } from '../../src/events/webhook-request.js';
import { startGateway, TEST_KEY, type RunningGateway } from '../helpers/gateway.js';

/*
 * Subscriptions over HTTP multipart, the transport Apollo Client's plain
 * HttpLink uses for them by default (`Accept: multipart/mixed;
 * subscriptionSpec="1.0", application/json`): the same events, with the same
 * key, as over SSE and graphql-ws. Before, such a request got 406 with an
 * empty body.
 */

describe("subscriptions through Apollo Client's HttpLink", () => {
  let running: RunningGateway;
  beforeAll(async () => {
    running = await startGateway({ SIMULATOR: 'off' });
  });
  afterAll(() => running?.close());

  it('delivers each event of transactionUpdated, in order, with its defaults', async () => {
    const client = new ApolloClient({
      link: new HttpLink({ uri: `${running.url}/graphql`, headers: { authorization: TEST_KEY } }),
      cache: new InMemoryCache(),
    });
    const transactionId = `http-sub-${randomUUID().slice(0, 8)}`;
    const received: string[] = [];
    const failures: unknown[] = [];
    const subscription = client
      .subscribe({ query: parse(`subscription { transactionUpdated(transactionId: "${transactionId}") { eventId status } }`) })
      .subscribe({
        next: (result) => {
          const update = (result.data as { transactionUpdated?: { status: string } } | undefined)?.transactionUpdated;
          if (update) received.push(update.status);
          if (result.error) failures.push(result.error);
        },
        error: (error: unknown) => failures.push(error),
      });
    try {
      // The stream is open once the gateway counts it.
      for (const deadline = Date.now() + 10_000; Date.now() < deadline; await new Promise((resolve) => setTimeout(resolve, 20))) {
        const metrics = await (await fetch(`${running.url}/metrics`)).text();
        if (/^vending_gateway_active_subscriptions [1-9]/m.test(metrics)) break;
      }
      for (const status of ['pending', 'paid', 'completed']) {
        const request = buildWebhookRequest({ form: 'enveloped', id: randomUUID(), transaction: { transactionId, status, products: [] } });
        expect((await fetch(`${running.url}/webhooks`, { method: 'POST', headers: request.headers, body: request.body })).status).toBe(200);
      }
      for (const deadline = Date.now() + 10_000; received.length < 3 && failures.length === 0 && Date.now() < deadline;)
        await new Promise((resolve) => setTimeout(resolve, 20));
      expect(failures).toEqual([]);
      expect(received).toEqual(['pending', 'paid', 'completed']);
    } finally {
      subscription.unsubscribe();
    }
  });

  it('counts only streams that started: refused requests leave the subscription gauge as it was', async () => {
    const gauge = async () =>
      Number(/^vending_gateway_active_subscriptions (\d+)/m.exec(await (await fetch(`${running.url}/metrics`)).text())?.[1] ?? NaN);
    // The subscription of the test before ends as its client leaves: from none open.
    for (const deadline = Date.now() + 10_000; (await gauge()) !== 0 && Date.now() < deadline;)
      await new Promise((resolve) => setTimeout(resolve, 20));
    const before = await gauge();
    expect(before).toBe(0);
    for (const accept of ['application/json', 'application/graphql-response+json', 'text/html']) {
      for (let send = 1; send <= 3; send += 1) {
        const answer = await fetch(`${running.url}/graphql`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: TEST_KEY, accept },
          body: JSON.stringify({ query: 'subscription { transactionUpdated { eventId } }' }),
        });
        expect(answer.status, `${accept}, send ${send}`).toBeGreaterThanOrEqual(400);
        await answer.arrayBuffer();
      }
    }
    // Given time to come down, were anything counted.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await gauge()).toBe(before);
  });
});
