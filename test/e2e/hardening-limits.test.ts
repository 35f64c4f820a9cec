import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { countingBackend } from '../helpers/counting-backend.js';
import type { Config } from '../../src/config/config.js';
import { demoBackend, OTHER_KEY, startGateway, TEST_KEY, type RunningGateway } from '../helpers/gateway.js';
import { codesOf, postGraphQL } from '../helpers/graphql-client.js';
import { waitFor } from '../helpers/wait-for.js';
import { subscribe, wsClient } from '../helpers/ws-client.js';

const started: RunningGateway[] = [];
afterAll(async () => {
  await Promise.all(started.map((gateway) => gateway.close()));
});

async function gateway(env: Record<string, string> = {}, tune?: (config: Config) => Config) {
  const backend = countingBackend(demoBackend());
  const running = await startGateway(env, { backend }, tune);
  started.push(running);
  return { ...running, backend };
}

describe('query limits', () => {
  let gw: Awaited<ReturnType<typeof gateway>>;
  beforeAll(async () => {
    gw = await gateway();
  });

  const nested = (depth: number) => {
    let selection = 'vendingId';
    for (let i = 0; i < depth; i++)
      selection = `edges { node { vendingId } } nodes { vendingId } pageInfo { hasNextPage } totalCount ${i === 0 ? '' : ''}`;
    return `{ vendings { ${selection} } }`;
  };

  it.each([
    ['a depth-50 query', `{ ${'vendings { nodes { '.repeat(25)}vendingId${' } }'.repeat(25)} }`, /depth|cost/i],
    [
      'a 10 000-alias query',
      `{ ${Array.from({ length: 10_000 }, (_, i) => `a${i}: transaction(id: "x") { status }`).join(' ')} }`,
      /token|alias/i,
    ],
    ['100 aliases', `{ ${Array.from({ length: 100 }, (_, i) => `a${i}: vendings { totalCount }`).join(' ')} }`, /alias/i],
    ['60 directives', `{ vendings @include(if: true) { totalCount ${'@skip(if: false) '.repeat(60)} } }`, /directive/i],
  ])('refuses %s with a code and without a backend call', async (_name, query, message) => {
    const before = gw.backend.calls.length;
    const response = await postGraphQL(gw.url, query);
    // The client accepts application/graphql-response+json: a refused document is a 400.
    expect(response.status).toBe(400);
    expect(response.body.data ?? null).toBeNull();
    expect(codesOf(response)[0]).toBe('BAD_USER_INPUT');
    expect(response.body.errors!.map((error) => error.message).join(' ')).toMatch(message);
    expect(gw.backend.calls.length).toBe(before);
  });

  it('answers 400 under the GraphQL-over-HTTP media type', async () => {
    const response = await fetch(`${gw.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json', authorization: TEST_KEY },
      body: JSON.stringify({ query: `{ ${'vendings { nodes { '.repeat(25)}vendingId${' } }'.repeat(25)} }` }),
    });
    expect(response.status).toBe(400);
    expect(response.headers.get('content-type')).toMatch(/application\/graphql-response\+json/);
  });

  it('lets a dashboard-sized query through', async () => {
    const aliases = Array.from(
      { length: 20 },
      (_, i) => `v${i}: vendings(first: 1) { nodes { vendingId products { productName productPrice } } }`,
    ).join(' ');
    const response = await postGraphQL(gw.url, `{ ${aliases} }`);
    expect(response.body.errors).toBeUndefined();
    void nested;
  });

  it('refuses a 5 MB body with 413 on GraphQL, REST and webhook routes', async () => {
    const big = JSON.stringify({ query: '{ vendings { totalCount } }', padding: 'x'.repeat(5 * 1024 * 1024) });
    const before = gw.backend.calls.length;
    for (const [path, method] of [
      ['/graphql', 'POST'],
      [`/transactions/x/payment`, 'PUT'],
      ['/webhooks', 'POST'],
    ] as const) {
      const response = await fetch(`${gw.url}${path}`, {
        method,
        headers: { 'content-type': 'application/json', authorization: TEST_KEY },
        body: big,
      });
      expect(response.status, path).toBe(413);
      const body = (await response.json()) as { errors: unknown };
      expect(body.errors).toBeDefined();
    }
    expect(gw.backend.calls.length).toBe(before);
  });

  it('refuses a chunked GraphQL body over the limit as it arrives', async () => {
    const chunk = new TextEncoder().encode('x'.repeat(64 * 1024));
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent++ === 0) controller.enqueue(new TextEncoder().encode('{"query":"{ vendings { totalCount } }","padding":"'));
        else if (sent < 40) controller.enqueue(chunk);
        else controller.close();
      },
    });
    const response = await fetch(`${gw.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: TEST_KEY },
      body,
      duplex: 'half',
    } as RequestInit);
    expect(response.status).toBe(413);
  });

  // Bodies of the other media types yoga reads (application/graphql, form-encoded) are bounded too.
  const chunked = (parts: string[]) => {
    const queue = parts.map((part) => new TextEncoder().encode(part));
    return new ReadableStream<Uint8Array>({
      pull(controller) {
        const next = queue.shift();
        if (next) controller.enqueue(next);
        else controller.close();
      },
    });
  };
  const postChunked = (contentType: string, parts: string[]) =>
    fetch(`${gw.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': contentType, authorization: TEST_KEY },
      body: chunked(parts),
      duplex: 'half',
    } as RequestInit);

  it('refuses a chunked application/graphql or form body over the limit', async () => {
    const padding = Array.from({ length: 40 }, () => `# ${'x'.repeat(64 * 1024)}\n`);
    const graphql = await postChunked('application/graphql', ['{ vendings { totalCount } }\n', ...padding]);
    expect(graphql.status).toBe(413);
    const form = await postChunked('application/x-www-form-urlencoded', [
      'query=%7B__typename%7D&padding=',
      ...padding.map(() => 'x'.repeat(64 * 1024)),
    ]);
    expect(form.status).toBe(413);
  });

  it('still answers a chunked application/graphql body within the limit', async () => {
    const response = await postChunked('application/graphql', ['{ vendings ', '{ totalCount } }']);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ data: { vendings: { totalCount: 8 } } });
  });

  it('does not take batched requests', async () => {
    const response = await fetch(`${gw.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: TEST_KEY },
      body: JSON.stringify([{ query: '{ vendings { totalCount } }' }, { query: '{ vendings { totalCount } }' }]),
    });
    expect(response.status).toBe(400);
  });

  it('refuses a GET query without the Authorization (CSRF) header before running it', async () => {
    const response = await fetch(`${gw.url}/graphql?query=${encodeURIComponent('{ vendings { totalCount } }')}`);
    expect(response.status).toBeGreaterThanOrEqual(400);
    expect(response.status).toBeLessThan(500);
  });
});

describe('introspection and suggestions', () => {
  it('turns introspection and suggestions off when asked, and in production', async () => {
    const off = await gateway({ INTROSPECTION: 'off' });
    const response = await postGraphQL(off.url, '{ __schema { types { name } } }');
    expect(new Set(codesOf(response))).toEqual(new Set(['BAD_USER_INPUT']));
    expect((await postGraphQL(off.url, '{ __typename }')).body.data).toEqual({ __typename: 'Query' });

    const production = await gateway({ NODE_ENV: 'production', WEBHOOK_UNSIGNED: 'allow' });
    expect(new Set(codesOf(await postGraphQL(production.url, '{ __schema { queryType { name } } }')))).toEqual(new Set(['BAD_USER_INPUT']));
    const typo = await postGraphQL(production.url, '{ vendigs { totalCount } }');
    expect(typo.body.errors![0]!.message).not.toMatch(/Did you mean/);
    // Hints tell as much of the schema as introspection: one switch turns both off.
    expect((await postGraphQL(off.url, '{ vendigs { totalCount } }')).body.errors![0]!.message).not.toMatch(/Did you mean/);
    const development = await gateway({});
    expect((await postGraphQL(development.url, '{ vendigs { totalCount } }')).body.errors![0]!.message).toMatch(/Did you mean/);
  });
});

describe('trusted documents', () => {
  const manifest = JSON.parse(readFileSync(new URL('../../schema/persisted-documents.json', import.meta.url), 'utf8')) as Record<
    string,
    string
  >;
  const fleetHash = Object.entries(manifest).find(([, text]) => text.startsWith('query FleetOverview'))![0];
  const liveHash = Object.entries(manifest).find(([, text]) => text.startsWith('subscription LiveTransactions'))![0];

  it('runs only the operations of schema/operations/, by hash', async () => {
    const gw = await gateway({ TRUSTED_DOCUMENTS: 'only' });
    const post = (body: unknown) =>
      fetch(`${gw.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: TEST_KEY },
        body: JSON.stringify(body),
      });
    const arbitrary = await post({ query: '{ vendings { totalCount } }' });
    expect(arbitrary.status).toBe(400);
    expect(((await arbitrary.json()) as { errors: Array<{ extensions: { code: string } }> }).errors[0]!.extensions.code).toBe(
      'PERSISTED_QUERY_ONLY',
    );
    const byHash = await post({ extensions: { persistedQuery: { version: 1, sha256Hash: fleetHash } }, variables: { first: 2 } });
    const fleet = (await byHash.json()) as { data: { vendings: { nodes: unknown[] } } };
    expect(fleet.data.vendings.nodes).toHaveLength(2);
    const byDocumentId = await post({ documentId: `sha256:${fleetHash}` });
    expect(byDocumentId.status).toBe(200);
    const unknown = await post({ extensions: { persistedQuery: { version: 1, sha256Hash: 'f'.repeat(64) } } });
    expect(((await unknown.json()) as { errors: Array<{ extensions: { code: string } }> }).errors[0]!.extensions.code).toBe(
      'PERSISTED_QUERY_NOT_FOUND',
    );
    expect(gw.backend.callsTo('listVendings')).toHaveLength(2);

    const client = wsClient(gw.url, TEST_KEY);
    // A subscription refused before it starts gets the protocol's `error` message.
    const refused = subscribe(client, 'subscription { transactionUpdated { eventId } }');
    expect(((await refused.ended) as Array<{ extensions?: { code?: string } }>)[0]?.extensions?.code).toBe('PERSISTED_QUERY_ONLY');
    // By hash, the same subscription runs.
    const events: unknown[] = [];
    const stop = client.subscribe(
      { query: '', extensions: { persistedQuery: { version: 1, sha256Hash: liveHash } } },
      { next: (r) => events.push(r), error: () => {}, complete: () => {} },
    );
    expect(await waitFor(() => gw.gateway.activeSubscriptions() === 1)).toBe(true);
    stop();
    await client.dispose();
  });

  it('over a raw WebSocket, runs a document sent by its hash alone and refuses an unknown hash, the connection going on', async () => {
    const gw = await gateway({ TRUSTED_DOCUMENTS: 'only' });
    const socket = new WebSocket(`${gw.url.replace('http', 'ws')}/graphql`, 'graphql-transport-ws');
    const messages: Array<{ id?: string; type: string; payload?: unknown }> = [];
    socket.on('message', (data) => messages.push(JSON.parse(String(data)) as (typeof messages)[number]));
    let closed: number | undefined;
    socket.on('close', (code) => (closed = code));
    await new Promise((resolve) => socket.once('open', resolve));
    socket.send(JSON.stringify({ type: 'connection_init', payload: { Authorization: TEST_KEY } }));
    expect(await waitFor(() => messages.some((message) => message.type === 'connection_ack'))).toBe(true);
    // The payloads the docs show: no `query`, only the hash.
    socket.send(
      JSON.stringify({
        id: 'unknown',
        type: 'subscribe',
        payload: { extensions: { persistedQuery: { version: 1, sha256Hash: 'f'.repeat(64) } } },
      }),
    );
    socket.send(
      JSON.stringify({ id: 'fleet', type: 'subscribe', payload: { documentId: `sha256:${fleetHash}`, variables: { first: 1 } } }),
    );
    expect(await waitFor(() => messages.some((message) => message.id === 'fleet' && message.type === 'complete'))).toBe(true);
    const unknown = messages.find((message) => message.id === 'unknown' && message.type !== 'complete');
    expect(JSON.stringify(unknown?.payload)).toContain('PERSISTED_QUERY_NOT_FOUND');
    const fleet = messages.find((message) => message.id === 'fleet' && message.type === 'next')?.payload as {
      data: { vendings: { nodes: unknown[] } };
    };
    expect(fleet.data.vendings.nodes).toHaveLength(1);
    expect(closed).toBeUndefined();
    socket.close();
  });

  it('has a manifest whose keys are the sha256 of their documents', async () => {
    const { createHash } = await import('node:crypto');
    for (const [hash, text] of Object.entries(manifest)) expect(createHash('sha256').update(text).digest('hex')).toBe(hash);
    expect(Object.keys(manifest).length).toBeGreaterThanOrEqual(9);
  });
});

describe('rate limit per key', () => {
  it('answers a flood from one key with 429 and Retry-After, while another key is served', async () => {
    const gw = await gateway({ RATE_LIMIT_PER_SECOND: '5' });
    const flood = await Promise.all(
      Array.from({ length: 15 }, () => fetch(`${gw.url}/vendings`, { headers: { authorization: TEST_KEY } })),
    );
    const limited = flood.filter((response) => response.status === 429);
    expect(limited.length).toBeGreaterThanOrEqual(10);
    expect(Number(limited[0]!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(await limited[0]!.json()).toEqual({ errors: { message: expect.stringMatching(/Too many requests/) } });
    const graphql = await postGraphQL(gw.url, '{ vendings { totalCount } }');
    expect(graphql.status).toBe(429);
    expect(codesOf(graphql)).toEqual(['RATE_LIMITED']);
    const other = await fetch(`${gw.url}/vendings`, { headers: { authorization: OTHER_KEY } });
    expect(other.status).toBe(200);
  });
});

describe('WebSocket limits', () => {
  const open = async (url: string) => {
    const socket = new WebSocket(`${url.replace('http', 'ws')}/graphql`, 'graphql-transport-ws');
    await new Promise((resolve) => socket.once('open', resolve));
    return socket;
  };
  const closeCode = (socket: WebSocket) => new Promise<number>((resolve) => socket.once('close', (code) => resolve(code)));

  it('closes a connection that never initialises with 4408', async () => {
    const gw = await gateway({}, (config) => ({ ...config, websocket: { ...config.websocket, initTimeoutMs: 200 } }));
    expect(await closeCode(await open(gw.url))).toBe(4408);
  });

  it('closes with 1009 on a message over the limit (MAX_BODY_BYTES when under 64 KiB)', async () => {
    const gw = await gateway({ MAX_BODY_BYTES: '2048' });
    const socket = await open(gw.url);
    const closed = closeCode(socket);
    socket.send(JSON.stringify({ type: 'connection_init', payload: { Authorization: TEST_KEY, padding: 'x'.repeat(4096) } }));
    expect(await closed).toBe(1009);
  });

  it('refuses subscriptions past the per-connection maximum', async () => {
    const gw = await gateway({}, (config) => ({ ...config, websocket: { ...config.websocket, maxSubscriptions: 2 } }));
    const client = wsClient(gw.url, TEST_KEY);
    const subs = Array.from({ length: 2 }, () => subscribe(client, 'subscription { transactionUpdated { eventId } }'));
    expect(await waitFor(() => gw.gateway.activeSubscriptions() === 2)).toBe(true);
    const third = subscribe(client, 'subscription { transactionUpdated { eventId } }');
    expect(((await third.ended) as Array<{ message: string }>)[0]?.message).toMatch(/At most 2 subscriptions/);
    subs[0]!.unsubscribe();
    expect(await waitFor(() => gw.gateway.activeSubscriptions() === 1)).toBe(true);
    const again = subscribe(client, 'subscription { transactionUpdated { eventId } }');
    expect(await waitFor(() => gw.gateway.activeSubscriptions() === 2)).toBe(true);
    again.unsubscribe();
    await client.dispose();
  });
});
