import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildWebhookRequest } from '../../src/events/webhook-request.js';
import type { GatewayDeps } from '../../src/app/gateway.js';
import { startForwardGateway, type RunningGateway } from '../helpers/gateway.js';
import { postGraphQL } from '../helpers/graphql-client.js';
import { startStandInUpstream, type StandInUpstream } from '../helpers/stand-in-upstream.js';

/*
 * Coalescing and caching in front of an independent upstream, in forward
 * mode so each client's own key reaches it: neither ever shares an answer
 * across keys, and neither serves a state older than the last webhook.
 */
const KEY_A = 'key-a';
const KEY_B = 'key-b';
let upstream: StandInUpstream;
const gateways: RunningGateway[] = [];

beforeAll(async () => {
  upstream = await startStandInUpstream({ keys: [KEY_A, KEY_B] });
});
afterAll(async () => {
  await Promise.all(gateways.map((gateway) => gateway.close()));
  await upstream.close();
});

async function gateway(env: Record<string, string>, deps: GatewayDeps = {}): Promise<RunningGateway> {
  const running = await startForwardGateway(upstream.url, env, deps);
  gateways.push(running);
  return running;
}

const tx = (n: number) => upstream.transactions[n] as { transactionId: string; status: string };
const statusOf = async (url: string, id: string, key: string) =>
  (await postGraphQL(url, `{ transaction(id: "${id}") { status } }`, { key })).body.data?.transaction?.status as string | undefined;
const callsFor = (id: string) => upstream.callsTo('GET', `/transactions/${id}`);

async function webhook(url: string, id: string, status: string): Promise<void> {
  const request = buildWebhookRequest({ form: 'legacy', transaction: { transactionId: id, status, products: [] } });
  const response = await fetch(`${url}/webhooks`, { method: 'POST', headers: request.headers, body: request.body });
  expect(response.status).toBe(200);
}

describe('request coalescing', () => {
  it('shares one upstream call among concurrent identical reads of one key, never across keys', async () => {
    const gw = await gateway({}, { fastPaths: { coalesce: true } });
    const { transactionId } = tx(1);
    const before = callsFor(transactionId).length;
    let release = () => {};
    const released = new Promise<void>((resolve) => (release = resolve));
    upstream.injectFault({ kind: 'until', released }, { pathPrefix: `/transactions/${transactionId}`, times: 2 });
    const reads = [
      ...Array.from({ length: 8 }, () => statusOf(gw.url, transactionId, KEY_A)),
      ...Array.from({ length: 8 }, () => statusOf(gw.url, transactionId, KEY_B)),
    ];
    // The upstream answers once every read is at the gateway and a call of each key is at the upstream: a fixed
    // delay was shorter than a busy machine took to send the sixteen.
    for (
      const deadline = Date.now() + 10_000;
      (gw.gateway.app.inFlight.size < reads.length || callsFor(transactionId).length - before < 2) && Date.now() < deadline;
    )
      await new Promise((resolve) => setTimeout(resolve, 10));
    await new Promise((resolve) => setTimeout(resolve, 100));
    release();
    expect(new Set(await Promise.all(reads))).toEqual(new Set([tx(1).status]));
    const made = callsFor(transactionId).slice(before);
    expect(made.map((call) => call.authorization).sort()).toEqual([KEY_A, KEY_B]);
  });

  it('makes one call per read when switched off', async () => {
    const gw = await gateway({}, { fastPaths: { coalesce: false } });
    const { transactionId } = tx(2);
    const before = callsFor(transactionId).length;
    upstream.injectFault({ kind: 'delay', ms: 100 }, { pathPrefix: `/transactions/${transactionId}`, times: 4 });
    await Promise.all(Array.from({ length: 4 }, () => statusOf(gw.url, transactionId, KEY_A)));
    expect(callsFor(transactionId).length - before).toBe(4);
  });

  it('does not let a read that starts after a webhook join one from before it', async () => {
    const gw = await gateway({}, { fastPaths: { coalesce: true } });
    const target = tx(3);
    const before = callsFor(target.transactionId).length;
    upstream.injectFault({ kind: 'delay', ms: 300 }, { pathPrefix: `/transactions/${target.transactionId}`, times: 1 });
    const early = statusOf(gw.url, target.transactionId, KEY_A);
    // Once the read is at the upstream (a busy machine may take longer than any fixed wait to send it there).
    while (callsFor(target.transactionId).length === before) await new Promise((resolve) => setTimeout(resolve, 10));
    target.status = 'changed-before-webhook';
    await webhook(gw.url, target.transactionId, 'changed-before-webhook');
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await statusOf(gw.url, target.transactionId, KEY_A)).toBe('changed-before-webhook');
    await early;
    expect(callsFor(target.transactionId).length - before).toBe(2);
  });
});

describe('entity cache', () => {
  it('serves repeated reads of one key from the cache, and reads of another key from the upstream', async () => {
    const gw = await gateway({ CACHE_TTL_MS: '60000' });
    const { transactionId } = tx(0);
    const before = callsFor(transactionId).length;
    for (let i = 0; i < 3; i++) expect(await statusOf(gw.url, transactionId, KEY_A)).toBe(tx(0).status);
    expect(callsFor(transactionId).length - before).toBe(1);
    expect(await statusOf(gw.url, transactionId, KEY_B)).toBe(tx(0).status);
    expect(
      callsFor(transactionId)
        .slice(before)
        .map((call) => call.authorization),
    ).toEqual([KEY_A, KEY_B]);
    const refused = await postGraphQL(gw.url, `{ transaction(id: "${transactionId}") { status } }`, { key: 'not-a-key' });
    expect(refused.body.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
  });

  it('never serves the state from before a webhook, for any key', async () => {
    const gw = await gateway({ CACHE_TTL_MS: '60000' });
    const target = tx(4);
    await statusOf(gw.url, target.transactionId, KEY_A);
    await statusOf(gw.url, target.transactionId, KEY_B);
    target.status = 'refunded';
    await webhook(gw.url, target.transactionId, 'refunded');
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await statusOf(gw.url, target.transactionId, KEY_A)).toBe('refunded');
    expect(await statusOf(gw.url, target.transactionId, KEY_B)).toBe('refunded');
  });

  it('reads a transaction afresh after a payment update through the gateway', async () => {
    const gw = await gateway({ CACHE_TTL_MS: '60000' });
    const { transactionId } = tx(1);
    await postGraphQL(gw.url, `{ transaction(id: "${transactionId}") { extra } }`, { key: KEY_A });
    const response = await fetch(`${gw.url}/transactions/${transactionId}/payment`, {
      method: 'PUT',
      headers: { authorization: KEY_A, 'content-type': 'application/json' },
      body: '{"paymentStatus":"captured"}',
    });
    expect(response.status).toBe(200);
    const after = await fetch(`${gw.url}/transactions/${transactionId}`, { headers: { authorization: KEY_A } });
    expect(((await after.json()) as { data: { payment: unknown } }).data.payment).toEqual({ paymentStatus: 'captured' });
  });
});

describe('response cache', () => {
  const query = (id: string) => `{ transaction(id: "${id}") { status } }`;
  const post = (url: string, id: string, key: string, headers: Record<string, string> = {}) =>
    fetch(`${url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: key, ...headers },
      body: JSON.stringify({ query: query(id) }),
    });

  it('keeps whole results per key, named by an ETag that a client can revalidate with (304)', async () => {
    const gw = await gateway({ CACHE_TTL_MS: '60000' });
    const { transactionId } = tx(2);
    const first = await post(gw.url, transactionId, KEY_A);
    const etag = first.headers.get('etag');
    expect(etag).toBeTruthy();
    expect(etag).not.toContain(KEY_A);
    await first.arrayBuffer();
    const again = await post(gw.url, transactionId, KEY_A);
    expect(again.headers.get('etag')).toBe(etag);
    expect(((await again.json()) as { data: unknown }).data).toEqual({ transaction: { status: tx(2).status } });
    const other = await post(gw.url, transactionId, KEY_B);
    expect(other.headers.get('etag')).not.toBe(etag);
    await other.arrayBuffer();
    const revalidated = await post(gw.url, transactionId, KEY_A, { 'if-none-match': etag! });
    expect(revalidated.status).toBe(304);
    const off = await gateway({ CACHE_TTL_MS: '60000' }, { fastPaths: { responseCache: false } });
    const uncached = await post(off.url, transactionId, KEY_A);
    expect(uncached.headers.get('etag')).toBeNull();
    await uncached.arrayBuffer();
  });

  it('answers a held result alike for every media type clients ask for, with or without a query string', async () => {
    const gw = await gateway({ CACHE_TTL_MS: '60000' });
    const body = JSON.stringify({
      query: 'query Sale($id: ID!) { transaction(id: $id) { id status products { productId } } }',
      variables: { id: tx(3).transactionId },
    });
    const ask = (path: string, accept?: string) =>
      fetch(`${gw.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: KEY_A, ...(accept ? { accept } : {}) },
        body,
      });
    await (await ask('/graphql')).arrayBuffer();
    for (const accept of [undefined, 'application/json', 'application/graphql-response+json,application/json;q=0.9']) {
      const [fast, handler] = [await ask('/graphql', accept), await ask('/graphql?handler', accept)];
      const seen = async (r: Response) => ({
        status: r.status,
        type: r.headers.get('content-type'),
        etag: r.headers.get('etag'),
        modified: r.headers.get('last-modified'),
        body: await r.text(),
      });
      const answer = await seen(fast);
      expect(answer).toEqual(await seen(handler));
      expect(answer.etag).toBeTruthy();
    }
  });

  it('counts a held answer under its operation, as any other answer', async () => {
    const gw = await gateway({ CACHE_TTL_MS: '60000' });
    const ask = () =>
      fetch(`${gw.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: KEY_A },
        body: JSON.stringify({
          query: `query HeldSale { transaction(id: "${tx(4).transactionId}") { status } }`,
          operationName: 'HeldSale',
        }),
      });
    for (let n = 0; n < 3; n += 1) expect((await ask()).headers.get('etag')).toBeTruthy();
    const metrics = await (await fetch(`${gw.url}/metrics`)).text();
    expect(metrics).toMatch(/vending_gateway_requests_total\{transport="graphql",operation="HeldSale",outcome="2xx"\} 3\b/);
  });

  it('refuses extensions nested too deep even when the result is held (they are no part of its key)', async () => {
    const gw = await gateway({ CACHE_TTL_MS: '60000' });
    const query = `{ transaction(id: "${tx(0).transactionId}") { customerId } }`;
    const ask = (extensions?: unknown) =>
      fetch(`${gw.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: KEY_A },
        body: JSON.stringify({ query, extensions }),
      });
    expect((await ask()).headers.get('etag')).toBeTruthy();
    let deep: unknown = 1;
    for (let n = 0; n < 200; n += 1) deep = { n: deep };
    const refused = (await (await ask({ deep })).json()) as { errors?: Array<{ extensions?: { code?: string } }> };
    expect(refused.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
  });

  it('keeps no result larger than 64 KiB, so a few large queries cannot fill memory', async () => {
    const gw = await gateway({ CACHE_TTL_MS: '60000', MAX_COST: '1000000' });
    const ids = Array.from({ length: 500 }, () => tx(2).transactionId);
    const ask = () =>
      fetch(`${gw.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: KEY_A },
        body: JSON.stringify({
          query:
            'query ($ids: [ID!]!) { transactions(ids: $ids) { transactionId status ' +
            'products { productId productName productPrice quantity productSku } } }',
          variables: { ids },
        }),
      });
    const large = await ask();
    const text = await large.text();
    expect(large.status).toBe(200);
    expect(text.length).toBeGreaterThan(65_536);
    expect(large.headers.get('etag')).toBeNull();
    const small = await post(gw.url, tx(2).transactionId, KEY_A);
    expect(small.headers.get('etag')).toBeTruthy();
    await small.arrayBuffer();
  });

  it('does not keep a result read before a webhook that arrived while it was read', async () => {
    const gw = await gateway({ CACHE_TTL_MS: '60000' });
    const target = tx(0);
    const old = target.status;
    upstream.injectFault({ kind: 'delay', ms: 300 }, { pathPrefix: `/transactions/${target.transactionId}`, times: 1 });
    const before = upstream.callsTo('GET', `/transactions/${target.transactionId}`).length;
    const early = statusOf(gw.url, target.transactionId, KEY_A);
    // Once the read is at the upstream (a busy machine may take longer than any fixed wait to send it there).
    while (upstream.callsTo('GET', `/transactions/${target.transactionId}`).length === before)
      await new Promise((resolve) => setTimeout(resolve, 10));
    // The event overtakes the answer: the upstream still answers the old state, then has the new one.
    await webhook(gw.url, target.transactionId, 'changed-while-read');
    expect(await early).toBe(old);
    target.status = 'changed-while-read';
    expect(await statusOf(gw.url, target.transactionId, KEY_A)).toBe('changed-while-read');
  });

  it("drops a transaction's results when its payment is updated through REST", async () => {
    const gw = await gateway({ CACHE_TTL_MS: '60000' });
    const { transactionId } = tx(1);
    const paymentOf = async () =>
      (await postGraphQL(gw.url, `{ transaction(id: "${transactionId}") { extra } }`, { key: KEY_A })).body.data?.transaction?.extra
        ?.payment as unknown;
    await paymentOf();
    const response = await fetch(`${gw.url}/transactions/${transactionId}/payment`, {
      method: 'PUT',
      headers: { authorization: KEY_A, 'content-type': 'application/json' },
      body: '{"paymentStatus":"settled"}',
    });
    expect(response.status).toBe(200);
    expect(await paymentOf()).toEqual({ paymentStatus: 'settled' });
  });
});
