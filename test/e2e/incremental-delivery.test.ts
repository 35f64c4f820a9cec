import { ApolloClient, HttpLink, InMemoryCache } from '@apollo/client';
import { Defer20220824Handler } from '@apollo/client/incremental';
import { Client as UrqlClient, cacheExchange, fetchExchange } from '@urql/core';
import { parse } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, TEST_KEY, type RunningGateway } from '../helpers/gateway.js';
import { readMultipart } from '../helpers/multipart.js';

/*
 * `@defer` and `@stream`, as a dashboard's slow panel asks for them: the fast
 * part first, the week's statistics after, over HTTP multipart (what Apollo
 * Client's HttpLink accepts) with the same rules as any operation. Before,
 * the gateway answered `Unknown directive "@defer".`.
 */

const DEFERRED = `query Panel {
  vendings(first: 2) { totalCount }
  ... @defer(label: "week") { transactionStats { count } }
}`;

describe('incremental delivery', () => {
  let running: RunningGateway;
  beforeAll(async () => {
    running = await startGateway({ SIMULATOR: 'off' });
  });
  afterAll(() => running?.close());

  it('sends the deferred part after the rest, as multipart/mixed, to a client that accepts it', async () => {
    for (let send = 1; send <= 3; send += 1) {
      const answer = await fetch(`${running.url}/graphql`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: TEST_KEY,
          accept: 'multipart/mixed;deferSpec=20220824, application/graphql-response+json, application/json',
        },
        body: JSON.stringify({ query: DEFERRED }),
      });
      expect(answer.status, `send ${send}`).toBe(200);
      expect(answer.headers.get('content-type'), `send ${send}`).toMatch(/^multipart\/mixed/);
      const parts = await partsOf(answer);
      expect(parts[0], `send ${send}`).toMatchObject({ data: { vendings: { totalCount: expect.any(Number) } }, hasNext: true });
      expect(parts.at(-1), `send ${send}`).toMatchObject({ hasNext: false });
      expect(JSON.stringify(parts.slice(1)), `send ${send}`).toContain('"label":"week"');
    }
  });

  it('gives Apollo Client the whole result through its HttpLink and @defer handler', async () => {
    const client = new ApolloClient({
      link: new HttpLink({ uri: `${running.url}/graphql`, headers: { authorization: TEST_KEY } }),
      cache: new InMemoryCache(),
      incrementalHandler: new Defer20220824Handler(),
    });
    const result = await client.query({ query: parse(DEFERRED), fetchPolicy: 'network-only' });
    expect(result.data).toMatchObject({ vendings: { totalCount: expect.any(Number) }, transactionStats: { count: expect.any(Number) } });
  });

  it('streams a list with @stream, and tells a client that takes only JSON what to accept', async () => {
    const query = '{ vendings(first: 3) { nodes @stream(initialCount: 1) { vendingId } } }';
    const post = (accept: string) =>
      fetch(`${running.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: TEST_KEY, accept },
        body: JSON.stringify({ query }),
      });
    const streamed = await post('multipart/mixed');
    expect(streamed.headers.get('content-type')).toMatch(/^multipart\/mixed/);
    const text = await streamed.text();
    expect(text).toContain('"hasNext":true');
    expect(text).toContain('"incremental"');
    for (let send = 1; send <= 3; send += 1) {
      const refused = await post('application/json');
      expect(refused.status, `send ${send}`).toBe(406);
      const body = (await refused.json()) as { errors: Array<{ message: string; extensions: { code: string } }> };
      expect(body.errors[0]?.message, `send ${send}`).toMatch(/Accept with one of .*multipart\/mixed/);
      expect(body.errors[0]?.extensions.code, `send ${send}`).toBe('BAD_REQUEST');
    }
  });
});

/** A multipart answer's parts, each a JSON object, in order (a single JSON answer is one part). */
const partsOf = (answer: Response) => readMultipart(answer, (parts, done) => (done ? parts : undefined));

describe('the rules count what is deferred', () => {
  const READ_LESS = 'defer-subscribe-only';
  let running: RunningGateway;
  beforeAll(async () => {
    running = await startGateway({ SIMULATOR: 'off', MAX_COST: '50', API_KEYS: `${TEST_KEY},${READ_LESS}:subscribe` });
  });
  afterAll(() => running?.close());

  const send = (query: string, key = TEST_KEY) =>
    fetch(`${running.url}/graphql`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: key,
        origin: running.url,
        accept: 'multipart/mixed;deferSpec=20220824, application/graphql-response+json, application/json',
      },
      body: JSON.stringify({ query }),
    });

  it('refuses a document whose deferred part costs past MAX_COST, and a key without read, every time', async () => {
    const ids = JSON.stringify(Array.from({ length: 100 }, (_, i) => `tx-${i}`));
    const costly = `query Costly { vendings(first: 1) { totalCount } ... @defer { transactions(ids: ${ids}) { status } } }`;
    for (let time = 1; time <= 3; time += 1) {
      const [refusal] = await partsOf(await send(costly));
      expect(JSON.stringify(refusal), `send ${time}`).toMatch(/MAX_COST/);
      expect(refusal, `send ${time}`).not.toHaveProperty('data.vendings');
      const [forbidden] = await partsOf(await send(DEFERRED, READ_LESS));
      expect(forbidden, `send ${time}`).toMatchObject({ errors: [{ extensions: { code: 'FORBIDDEN' } }] });
    }
  });

  it("keeps a deferred part's error in that part", async () => {
    const failing = `query Failing { vendings(first: 1) { totalCount } ... @defer(label: "bad") { transactionStats(since: "2026-01-02T00:00:00Z", until: "2026-01-01T00:00:00Z") { count } } }`;
    const parts = await partsOf(await send(failing));
    expect(parts[0]).toMatchObject({ data: { vendings: { totalCount: expect.any(Number) } }, hasNext: true });
    expect(parts[0]).not.toHaveProperty('errors');
    const later = JSON.stringify(parts.slice(1));
    expect(later).toContain('"label":"bad"');
    expect(later).toMatch(/since must be before until/);
  });
});

describe("urql's defaults and @defer", () => {
  let running: RunningGateway;
  beforeAll(async () => {
    running = await startGateway({ SIMULATOR: 'off' });
  });
  afterAll(() => running?.close());

  /*
   * urql's fetchExchange reads both incremental formats. Its own Accept lists
   * text/event-stream before multipart/mixed, and the gateway takes the first
   * it serves, so its defaults get SSE; a client that asks for multipart only
   * (`fetchOptions` headers) gets multipart. Either way the deferred part
   * comes second and urql merges it into the first.
   */
  it.each([
    ['its defaults', undefined, 'text/event-stream'],
    ['multipart asked for', 'multipart/mixed', 'multipart/mixed'],
  ])('merges the deferred part into the result (%s)', async (_name, accept, answeredWith) => {
    const answered: Array<string | null> = [];
    const client = new UrqlClient({
      url: `${running.url}/graphql`,
      exchanges: [cacheExchange, fetchExchange],
      fetchOptions: { headers: accept ? { authorization: TEST_KEY, accept } : { authorization: TEST_KEY } },
      requestPolicy: 'network-only',
      // Only watches how the gateway answered.
      fetch: async (input, init) => {
        const response = await fetch(input, init);
        answered.push(response.headers.get('content-type'));
        return response;
      },
    });
    const results: Array<{ data?: unknown; error?: unknown; hasNext?: boolean }> = [];
    await new Promise<void>((resolve) => {
      const { unsubscribe } = client.query(DEFERRED, {}).subscribe((result) => {
        results.push({ data: result.data as unknown, error: result.error, hasNext: result.hasNext });
        if (!result.hasNext || result.error) {
          queueMicrotask(() => unsubscribe());
          resolve();
        }
      });
    });
    expect(answered).toHaveLength(1);
    expect(answered[0]).toMatch(new RegExp(`^${answeredWith}`));
    expect(results.map((result) => result.error)).toEqual(results.map(() => undefined));
    // The fast part alone first, then the whole.
    expect(results[0]).toMatchObject({ hasNext: true, data: { vendings: { totalCount: expect.any(Number) } } });
    expect(results[0]?.data).not.toHaveProperty('transactionStats');
    expect(results.at(-1)).toMatchObject({
      hasNext: false,
      data: { vendings: { totalCount: expect.any(Number) }, transactionStats: { count: expect.any(Number) } },
    });
  });
});
