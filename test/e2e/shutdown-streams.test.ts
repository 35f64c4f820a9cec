import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildWebhookRequest } from '../../src/events/webhook-request.js';
import { demoBackend, startGateway, TEST_KEY } from '../helpers/gateway.js';
import { subscribe, wsClient } from '../helpers/ws-client.js';
import { startStandInUpstream, type StandInUpstream } from '../helpers/stand-in-upstream.js';

/*
 * A stopping gateway waits for every request in flight and ends only the
 * streams (SSE subscriptions) with the subscriptions. What is a stream is
 * known where the stream is made, not guessed from what the client accepts:
 * a plain request that says it accepts `text/event-stream` is still waited for.
 */

const KEY = 'upstream-key';
let upstream: StandInUpstream;

beforeAll(async () => {
  upstream = await startStandInUpstream({ keys: [KEY] });
});
afterAll(() => upstream.close());

describe('shutdown and streams', () => {
  it('answers a slow REST read that accepts text/event-stream before it stops', async () => {
    const gateway = await startGateway({ BACKEND: 'rest', UPSTREAM_URL: upstream.url, UPSTREAM_API_KEY: KEY });
    const id = String(upstream.transactions[0]?.transactionId);
    upstream.injectFault({ kind: 'delay', ms: 600 }, { method: 'GET', pathPrefix: '/transactions/', times: 1 });
    const read = fetch(`${gateway.url}/transactions/${id}`, {
      headers: { authorization: 'test-key-1', accept: 'text/event-stream, application/json' },
    });
    // The read has reached the upstream, which answers it late.
    for (let i = 0; i < 100 && upstream.openRequests === 0; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(upstream.openRequests).toBe(1);
    const closed = gateway.close();
    const response = await read;
    expect(response.status).toBe(200);
    expect(((await response.json()) as { data: { transactionId: string } }).data.transactionId).toBe(id);
    await closed;
  });
});

/**
 * Sends a request whose body arrives in two parts, the second 300 ms later,
 * and resolves with its status: a request still arriving when a test begins
 * the shutdown meanwhile.
 */
function sendInTwoParts(url: string, path: string, method: string, headers: Record<string, string>, text: string): Promise<number> {
  const body = Buffer.from(text);
  return new Promise<number>((resolve, reject) => {
    const request = httpRequest(
      { host: '127.0.0.1', port: new URL(url).port, path, method, headers: { ...headers, 'content-length': String(body.length) } },
      (response) => {
        response.resume();
        resolve(response.statusCode ?? 0);
      },
    );
    request.on('error', reject);
    request.write(body.subarray(0, 5));
    setTimeout(() => request.end(body.subarray(5)), 300);
  });
}

describe('shutdown and a webhook that accepts text/event-stream', () => {
  it('waits for the webhook still arriving, takes it and delivers it before the subscriptions end', async () => {
    const gateway = await startGateway();
    const events = subscribe(wsClient(gateway.url, TEST_KEY), 'subscription { transactionUpdated { eventId } }');
    await new Promise((resolve) => setTimeout(resolve, 200));
    const webhook = buildWebhookRequest({
      form: 'enveloped',
      transaction: { transactionId: 'slow-1', status: 'pending', products: [] },
      id: 'evt-slow-1',
    });
    const answer = sendInTwoParts(gateway.url, '/webhooks', 'POST', { ...webhook.headers, accept: 'text/event-stream' }, webhook.body);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const closed = gateway.close();
    expect(await answer).toBe(200);
    await closed;
    const ids = events.received.map((result) => (result.data as { transactionUpdated: { eventId: string } }).transactionUpdated.eventId);
    expect(ids).toEqual(['evt-slow-1']);
  });
});

describe('shutdown and a payment still arriving', () => {
  it('answers it and delivers its event before the subscriptions end (memory backend, which sends the service events)', async () => {
    const backend = demoBackend();
    const gateway = await startGateway({}, { backend });
    const events = subscribe(wsClient(gateway.url, TEST_KEY), 'subscription { transactionUpdated { transactionId } }');
    await new Promise((resolve) => setTimeout(resolve, 200));
    const id = backend.transactionIds()[0]!;
    const answer = sendInTwoParts(
      gateway.url,
      `/transactions/${id}/payment`,
      'PUT',
      { authorization: TEST_KEY, 'content-type': 'application/json' },
      JSON.stringify({ paymentStatus: 'captured' }),
    );
    await new Promise((resolve) => setTimeout(resolve, 100));
    const closed = gateway.close();
    expect(await answer).toBe(200);
    await closed;
    const ids = events.received.map(
      (result) => (result.data as { transactionUpdated: { transactionId: string } }).transactionUpdated.transactionId,
    );
    expect(ids).toEqual([id]);
  });
});
