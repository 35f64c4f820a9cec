import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, TEST_KEY, type RunningGateway } from '../helpers/gateway.js';
import { codesOf, postGraphQL } from '../helpers/graphql-client.js';
import { startStandInUpstream, type StandInUpstream } from '../helpers/stand-in-upstream.js';
import { subscribe, wsClient } from '../helpers/ws-client.js';
import { rawRequest, upstreamCallsDuring } from '../helpers/raw-request.js';

/*
 * Input is bounded and never echoed in bulk. Ids over 256
 * UTF-8 bytes are refused before any upstream call, on every transport; error
 * messages quote at most a short prefix of what the client sent; and an id
 * reaches the upstream as one path segment.
 */
const KEY = 'upstream-key';
/** Generous next to a short refusal per field, tiny next to what echoing the input would make. */
const SMALL_ANSWER = 64 * 1024;
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

/** POSTs a GraphQL request and reads the answer as text (its size is the point). */
async function postRaw(query: string, variables?: Record<string, unknown>): Promise<{ status: number; text: string }> {
  const response = await fetch(`${gw.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json', authorization: TEST_KEY },
    body: JSON.stringify({ query, variables }),
  });
  return { status: response.status, text: await response.text() };
}

const knownId = () => (upstream.transactions[0] as { transactionId: string }).transactionId;

describe('huge ids', () => {
  it('answers fifty aliases of a 900 KB id small, without an upstream call', async () => {
    const id = 'x'.repeat(900_000);
    const fields = Array.from({ length: 50 }, (_, a) => `a${a}: transaction(id: $id) { transactionId status }`).join(' ');
    const { calls, result } = await upstreamCallsDuring(upstream, () => postRaw(`query ($id: ID!) { ${fields} }`, { id }));
    expect(calls).toBe(0);
    expect(result.text.length).toBeLessThan(SMALL_ANSWER);
    const body = JSON.parse(result.text) as { errors: Array<{ message: string; extensions: { code: string } }> };
    expect(body.errors.length).toBeGreaterThan(0);
    for (const error of body.errors) {
      expect(error.extensions.code).toBe('BAD_USER_INPUT');
      expect(error.message).toMatch(/256 bytes/);
    }
  });

  it('answers them small with the memory backend too, whose NOT_FOUND once quoted each id whole (44 MB)', async () => {
    const memory = await startGateway();
    try {
      const fields = Array.from({ length: 50 }, (_, a) => `a${a}: transaction(id: $id) { status }`).join(' ');
      const response = await fetch(`${memory.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: TEST_KEY },
        body: JSON.stringify({ query: `query ($id: ID!) { ${fields} }`, variables: { id: 'x'.repeat(900_000) } }),
      });
      expect((await response.text()).length).toBeLessThan(SMALL_ANSWER);
    } finally {
      await memory.close();
    }
  });

  it.each([
    ['transaction(id:)', 'query ($id: ID!) { transaction(id: $id) { status } }', (id: string) => ({ id })],
    ['transactions(ids:)', 'query ($id: ID!) { transactions(ids: ["a", $id]) { status } }', (id: string) => ({ id })],
    ['vending(id:)', 'query ($id: ID!) { vending(id: $id) { vendingId } }', (id: string) => ({ id })],
    [
      'updateTransactionPayment',
      'mutation ($id: ID!) { updateTransactionPayment(transactionId: $id, payment: {paid: true}) { transaction { status } } }',
      (id: string) => ({ id }),
    ],
  ])('refuses an id over 256 UTF-8 bytes in %s, before any upstream call', async (_name, query, variables) => {
    // 129 characters, 258 bytes: the bound is in bytes.
    const id = 'é'.repeat(129);
    const { calls, result } = await upstreamCallsDuring(upstream, () => postGraphQL(gw.url, query, { variables: variables(id) }));
    expect(calls).toBe(0);
    expect(codesOf(result)).toContain('BAD_USER_INPUT');
    expect(result.body.errors!.every((error) => error.message.length < 300)).toBe(true);
  });

  it('takes an id of exactly 256 bytes to the upstream', async () => {
    const id = 'é'.repeat(128);
    const { calls, result } = await upstreamCallsDuring(upstream, () =>
      postGraphQL(gw.url, 'query ($id: ID!) { transaction(id: $id) { status } }', { variables: { id } }),
    );
    expect(calls).toBe(1);
    expect(codesOf(result)).toEqual(['NOT_FOUND']);
  });

  it('quotes only a prefix of an unknown id in the NOT_FOUND messages of its own', async () => {
    // Three vendings at once are read with one list call, and the gateway words what the list lacks.
    const ids = ['a', 'b', 'c'].map((letter) => letter + 'é'.repeat(127));
    const query =
      'query ($a: ID!, $b: ID!, $c: ID!) { a: vending(id: $a) { vendingId } ' +
      'b: vending(id: $b) { vendingId } c: vending(id: $c) { vendingId } }';
    const { calls, result } = await upstreamCallsDuring(upstream, () =>
      postGraphQL(gw.url, query, { variables: { a: ids[0], b: ids[1], c: ids[2] } }),
    );
    expect(calls).toBe(1);
    expect(codesOf(result)).toEqual(['NOT_FOUND', 'NOT_FOUND', 'NOT_FOUND']);
    for (const error of result.body.errors!) {
      expect(error.message).toContain('…');
      expect(ids.some((id) => error.message.includes(id))).toBe(false);
    }
  });

  it('refuses a subscription whose transactionId is over the bound', async () => {
    const client = wsClient(gw.url, TEST_KEY);
    try {
      const subscription = subscribe(client, 'subscription ($id: ID) { transactionUpdated(transactionId: $id) { eventId } }', {
        id: 't'.repeat(1_000),
      });
      const result = await subscription.next(5_000);
      expect(result.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT' });
      expect(JSON.stringify(result).length).toBeLessThan(1_000);
    } finally {
      await client.dispose();
    }
  });

  it.each([
    ['GET', '/transactions/'],
    ['GET', '/vendings/'],
    ['PUT', '/transactions/{id}/payment'],
  ])('answers %s %s with an id over the bound 400 in the contract envelope, without an upstream call', async (method, template) => {
    for (const id of ['a'.repeat(257), 'a'.repeat(5_000), encodeURIComponent('é'.repeat(129))]) {
      const path = template.includes('{id}') ? template.replace('{id}', id) : template + id;
      const { calls, result } = await upstreamCallsDuring(upstream, () =>
        rawRequest(gw.url, method, path, method === 'PUT' ? '{"paid":true}' : undefined),
      );
      expect(calls).toBe(0);
      expect(result.status).toBe(400);
      const body = JSON.parse(result.text) as { errors: { message: string } };
      expect(body.errors.message).toMatch(/256 bytes/);
      expect(result.text.length).toBeLessThan(300);
    }
  });
});

describe('client input in error messages', () => {
  it('quotes only a prefix of an enum value sent through a variable', async () => {
    const value = 'PLANOGRAMX'.repeat(50_000);
    const result = await postRaw('query ($view: ProductsView!) { vending(id: "v", products: $view) { vendingId } }', { view: value });
    expect(codesOf({ status: result.status, body: JSON.parse(result.text) })).toEqual(['BAD_USER_INPUT']);
    expect(result.text.length).toBeLessThan(2_000);
  });

  it('quotes only a prefix of a value of the wrong type', async () => {
    const result = await postRaw('query ($first: Int) { vendings(first: $first) { totalCount } }', { first: '9'.repeat(500_000) + 'x' });
    expect(result.text.length).toBeLessThan(2_000);
  });

  it('quotes only a prefix of an enum value or a field name written in the document', async () => {
    const enumLiteral = await postRaw(`{ vending(id: "v", products: ${'P'.repeat(200_000)}) { vendingId } }`);
    expect(enumLiteral.text.length).toBeLessThan(2_000);
    const field = await postRaw(`{ ${'f'.repeat(200_000)} }`);
    expect(field.text.length).toBeLessThan(2_000);
  });
  it('does not echo a body that is not JSON (the parser quotes it whole)', async () => {
    for (const contentType of ['application/json', 'application/json; charset=utf-8']) {
      const response = await fetch(`${gw.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': contentType, origin: 'http://localhost:1234', authorization: TEST_KEY },
        body: `x${'A'.repeat(900_000)}`,
      });
      const text = await response.text();
      expect(response.status).toBe(400);
      expect(text.length).toBeLessThan(2_048);
      expect(text).not.toContain('AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA');
      expect(text).not.toContain('originalError');
    }
  });

  it('names a few of the problems of a refused webhook body, not one per array item', async () => {
    const body = JSON.stringify({
      event: 'transaction',
      data: { transactionId: 't-1', status: 'paid', products: Array.from({ length: 50_000 }, () => 1) },
    });
    const response = await fetch(`${gw.url}/webhooks`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    const text = await response.text();
    expect(response.status).toBe(400);
    expect(text.length).toBeLessThan(4_096);
    expect(text).toMatch(/and \d+ more/);
  });
});

describe('ids as one path segment upstream', () => {
  it.each(['.', '..'])('refuses the id %j, which no server reads as a segment of its own, without an upstream call', async (id) => {
    const graphql = await upstreamCallsDuring(upstream, () =>
      postGraphQL(gw.url, 'query ($id: ID!) { transaction(id: $id) { status } }', { variables: { id } }),
    );
    expect(graphql.calls).toBe(0);
    expect(codesOf(graphql.result)).toEqual(['BAD_USER_INPUT']);
    const rest = await upstreamCallsDuring(upstream, () => rawRequest(gw.url, 'PUT', `/transactions/${id}/payment`, '{"paid":true}'));
    expect(rest.calls).toBe(0);
    expect(rest.result.status).toBe(400);
  });

  it.each(['...', '%2E%2E', 'a?b#c', 'a..b'])('sends the id %j as one segment', async (id) => {
    const { calls } = await upstreamCallsDuring(upstream, () =>
      postGraphQL(gw.url, 'query ($id: ID!) { transaction(id: $id) { status } }', { variables: { id } }),
    );
    expect(calls).toBe(1);
    const call = upstream.calls.at(-1)!;
    const segments = call.path.split('/').filter(Boolean).map(decodeURIComponent);
    expect(segments).toEqual(['transactions', id]);
  });

  it('still reads a known transaction', async () => {
    const response = await postGraphQL(gw.url, `{ transaction(id: "${knownId()}") { status } }`);
    expect(response.body.errors).toBeUndefined();
  });
});
