import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, TEST_KEY, type RunningGateway } from '../helpers/gateway.js';
import { codesOf, postGraphQL } from '../helpers/graphql-client.js';
import { startStandInUpstream, type StandInUpstream } from '../helpers/stand-in-upstream.js';
import { waitFor } from '../helpers/wait-for.js';
import { subscribe, wsClient } from '../helpers/ws-client.js';
import { rawRequest, upstreamCallsDuring } from '../helpers/raw-request.js';

/*
 * Ids a service could route on, or that are not text at all, are refused by
 * the one id rule on every surface (GraphQL arguments, REST paths, webhooks)
 * before any upstream call: a lone surrogate cannot be encoded in a URL (it
 * was a URIError, masked as "Unexpected error."), and `/`, `\`, control
 * characters and CR/LF are safe in one percent-encoded segment only as long as
 * the service never decodes before routing.
 */
const KEY = 'upstream-key';
let upstream: StandInUpstream;
let gw: RunningGateway;

beforeAll(async () => {
  upstream = await startStandInUpstream({ keys: [KEY] });
  gw = await startGateway({ BACKEND: 'rest', UPSTREAM_URL: upstream.url, UPSTREAM_API_KEY: KEY });
});
afterAll(async () => {
  await gw.close();
  await upstream.close();
});

/** Percent-encodes `id` as UTF-8, a lone surrogate as the three bytes UTF-8 would give it (which no decoder accepts). */
const pathSegment = (id: string): string =>
  [...id]
    .map((char) => {
      const code = char.charCodeAt(0);
      if (char.length > 1 || code < 0xd800 || code > 0xdfff) return encodeURIComponent(char);
      return [0xe0 | (code >> 12), 0x80 | ((code >> 6) & 0x3f), 0x80 | (code & 0x3f)]
        .map((byte) => `%${byte.toString(16).toUpperCase()}`)
        .join('');
    })
    .join('');

const ODD_IDS: Array<[string, string]> = [
  ['a lone surrogate', '\ud800'],
  ['a lone low surrogate inside', 'a\udc00b'],
  ['a slash', 'a/b'],
  ['a dot segment behind a slash', '../vendings'],
  ['a backslash', 'a\\b'],
  ['NUL', 'a\u0000b'],
  ['CR/LF', 'a\r\nb'],
  ['a tab', 'a\tb'],
  ['DEL', 'a\u007fb'],
  ['a C1 control character', 'a\u0085b'],
];

const GRAPHQL_READS: Array<[string, string]> = [
  ['transaction(id:)', 'query ($id: ID!) { transaction(id: $id) { status } }'],
  ['transactions(ids:)', 'query ($id: ID!) { transactions(ids: [$id]) { status } }'],
  ['vending(id:)', 'query ($id: ID!) { vending(id: $id) { vendingId } }'],
  [
    'updateTransactionPayment',
    'mutation ($id: ID!) { updateTransactionPayment(transactionId: $id, payment: {paid: true}) { transaction { status } } }',
  ],
];

describe.each(ODD_IDS)('an id holding %s', (_name, id) => {
  it.each(GRAPHQL_READS)('is BAD_USER_INPUT in %s, before any upstream call', async (_field, query) => {
    const { calls, result } = await upstreamCallsDuring(upstream, () => postGraphQL(gw.url, query, { variables: { id } }));
    expect(calls).toBe(0);
    expect(result.status).toBeLessThan(500);
    expect(codesOf(result)).toEqual(['BAD_USER_INPUT']);
  });

  it('is 400 on the REST paths, before any upstream call', async () => {
    const segment = pathSegment(id);
    for (const [method, path] of [
      ['GET', `/transactions/${segment}`],
      ['PUT', `/transactions/${segment}/payment`],
      ['GET', `/vendings/${segment}`],
    ] as const) {
      const { calls, result } = await upstreamCallsDuring(upstream, () =>
        rawRequest(gw.url, method, path, method === 'PUT' ? '{"paid":true}' : undefined),
      );
      expect(calls).toBe(0);
      expect(result.status).toBe(400);
      expect(JSON.parse(result.text)).toMatchObject({ errors: { message: expect.any(String) } });
    }
  });

  it('is a 400 webhook, never published', async () => {
    const body = JSON.stringify({ event: 'transaction', data: { transactionId: id, status: 'paid', products: [] } });
    const response = await fetch(`${gw.url}/webhooks`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ errors: { message: expect.stringContaining('transactionId') } });
  });
});

describe('the one id rule', () => {
  it('still takes ids a service cannot route on to the upstream as one segment', async () => {
    for (const id of ['...', '%2E%2E', 'a?b#c', 'é', 'a b', '😀']) {
      const { calls } = await upstreamCallsDuring(upstream, () =>
        postGraphQL(gw.url, 'query ($id: ID!) { transaction(id: $id) { status } }', { variables: { id } }),
      );
      expect(calls).toBe(1);
      const segments = upstream.calls.at(-1)!.path.split('/').filter(Boolean).map(decodeURIComponent);
      expect(segments).toEqual(['transactions', id]);
    }
  });

  it('refuses an envelope id that is not text (400), and keeps event ids a path would refuse', async () => {
    const envelope = (id: string, n: number) =>
      JSON.stringify({ id, type: 'transaction.update', data: { transactionId: `tx-${n}`, status: 'paid', products: [] } });
    const post = (body: string) => fetch(`${gw.url}/webhooks`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    const refused = await post(envelope('evt-\ud800', 1));
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ errors: { message: expect.stringMatching(/id: .*surrogate/) } });
    // An event id never goes into a path: a slash in it is the sender's business.
    expect((await post(envelope('evt/2', 2))).status).toBe(200);
  });

  it('refuses a subscription filtered on such an id', async () => {
    const client = wsClient(gw.url, TEST_KEY);
    try {
      const subscription = subscribe(client, 'subscription ($id: ID) { transactionUpdated(transactionId: $id) { eventId } }', {
        id: 'a/b',
      });
      const result = await subscription.next(5_000);
      expect(result.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT' });
    } finally {
      await client.dispose();
    }
  });

  it('gives subscribers selecting the transaction the next event served, not an internal error', async () => {
    const client = wsClient(gw.url, TEST_KEY);
    try {
      const subscription = subscribe(client, 'subscription { transactionUpdated { transactionId transaction { status } } }');
      const known = (upstream.transactions[0] as { transactionId: string }).transactionId;
      // A status of its own each time: a legacy body equal to the transaction's last event is a redelivery.
      const post = (transactionId: string, attempt: number) =>
        fetch(`${gw.url}/webhooks`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ event: 'transaction', data: { transactionId, status: `paid-${attempt}`, products: [] } }),
        });
      // The subscription is live once an event sent after it arrives.
      for (let attempt = 0; attempt < 50 && subscription.received.length === 0; attempt++) {
        expect((await post('\ud800', attempt)).status).toBe(400);
        await post(known, attempt);
        await waitFor(() => subscription.received.length > 0, 200);
      }
      const first = subscription.received[0];
      expect(first?.errors).toBeUndefined();
      expect(first?.data).toMatchObject({ transactionUpdated: { transactionId: known } });
    } finally {
      await client.dispose();
    }
  });
});
