import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startForwardGateway, answeringGateway, type RunningGateway } from '../helpers/gateway.js';
import { codesOf, postGraphQL } from '../helpers/graphql-client.js';
import { startStandInUpstream, type StandInUpstream } from '../helpers/stand-in-upstream.js';

/*
 * The gateway in rest mode in front of an independent stand-in of the service
 * that adds fields the contract does not name and misbehaves on request.
 */
const KEY = 'upstream-key';
let upstream: StandInUpstream;
let gateway: RunningGateway;

const firstTransaction = () => upstream.transactions[0] as { transactionId: string };
const vendingIds = () => upstream.vendings.map((v) => v.vendingId as string);

beforeAll(async () => {
  upstream = await startStandInUpstream({ keys: [KEY] });
  gateway = await startForwardGateway(upstream.url, { UPSTREAM_TIMEOUT_MS: '300' });
});
afterAll(async () => {
  await gateway.close();
  await upstream.close();
});
afterEach(() => upstream.clearFaults());

const rest = async (path: string, init: RequestInit = {}) => {
  const response = await gateway.fetch(gateway.url + path, {
    ...init,
    headers: { authorization: KEY, 'content-type': 'application/json', ...init.headers },
  });
  return { status: response.status, body: await response.json() };
};

describe('nothing lost', () => {
  it('passes REST bodies through deep-equal, unknown fields included', async () => {
    const id = firstTransaction().transactionId;
    const direct = await (await fetch(`${upstream.url}/transactions/${id}`, { headers: { authorization: KEY } })).json();
    const through = await rest(`/transactions/${id}`);
    expect(through.status).toBe(200);
    expect(through.body).toEqual(direct);
    expect(through.body.data.meta).toEqual({ source: 'kiosk', tags: ['a', 'b'] });
    for (const view of ['flat', 'planogram']) {
      const directList = await (await fetch(`${upstream.url}/vendings?products=${view}`, { headers: { authorization: KEY } })).json();
      expect((await rest(`/vendings?products=${view}`)).body).toEqual(directList);
    }
  });

  it('shows unknown fields in GraphQL `extra` and the planogram unchanged', async () => {
    const id = firstTransaction().transactionId;
    const { body } = await postGraphQL(
      gateway,
      `{ transaction(id: "${id}") { extra products { extra } } vendings(products: PLANOGRAM) { nodes { planogram extra } } }`,
      { key: KEY },
    );
    expect(body.errors).toBeUndefined();
    expect(body.data!.transaction.extra).toMatchObject({ terminalId: 'T-9', meta: { source: 'kiosk', tags: ['a', 'b'] } });
    expect(body.data!.transaction.products[0].extra).toHaveProperty('vatRate');
    const direct = await (await fetch(`${upstream.url}/vendings?products=planogram`, { headers: { authorization: KEY } })).json();
    expect(body.data!.vendings.nodes.map((n: { planogram: unknown }) => n.planogram)).toEqual(
      direct.data.map((v: { products: unknown }) => v.products),
    );
    expect(body.data!.vendings.nodes[0].planogram).toMatchObject({ layout: 'grid' });
    expect(body.data!.vendings.nodes[0].extra).toHaveProperty('firmware');
  });
});

describe('upstream call counts', () => {
  it('reads a transaction asked for twice once', async () => {
    const id = firstTransaction().transactionId;
    const before = upstream.calls.length;
    const { body } = await postGraphQL(gateway, `{ a: transaction(id: "${id}") { status } b: transaction(id: "${id}") { total } }`, {
      key: KEY,
    });
    expect(body.errors).toBeUndefined();
    expect(upstream.calls.length - before).toBe(1);
  });

  it('serves vendings plus five vending aliases with at most two calls', async () => {
    const ids = [...vendingIds(), ...vendingIds()].slice(0, 5);
    const aliases = ids.map((id, i) => `v${i}: vending(id: "${id}") { vendingId }`).join(' ');
    const before = upstream.calls.length;
    const { body } = await postGraphQL(gateway, `{ vendings { totalCount } ${aliases} }`, { key: KEY });
    expect(body.errors).toBeUndefined();
    expect(upstream.calls.length - before).toBeLessThanOrEqual(2);
  });

  it('reads two vending ids with two single calls, below the list threshold', async () => {
    const [a, b] = vendingIds();
    const before = upstream.calls.length;
    await postGraphQL(gateway, `{ a: vending(id: "${a}") { vendingId } b: vending(id: "${b}") { vendingId } }`, { key: KEY });
    const made = upstream.calls.slice(before);
    expect(made.map((c) => c.path).sort()).toEqual([`/vendings/${a}`, `/vendings/${b}`].sort());
  });
});

describe('faults map to codes, never a crash', () => {
  const id = () => firstTransaction().transactionId;

  it.each([
    ['500 with an error envelope', { kind: 'status', status: 500 } as const, 'UPSTREAM_ERROR', 502],
    ['500 with HTML', { kind: 'html' } as const, 'UPSTREAM_ERROR', 502],
    ['200 that is not JSON', { kind: 'not-json' } as const, 'UPSTREAM_ERROR', 502],
    ['200 of the wrong shape', { kind: 'wrong-shape' } as const, 'UPSTREAM_ERROR', 502],
    ['a hang past the timeout', { kind: 'hang' } as const, 'UPSTREAM_TIMEOUT', 504],
    ['403', { kind: 'status', status: 403, body: '{"errors":{"message":"key lacks scope"}}' } as const, 'FORBIDDEN', 403],
    ['422', { kind: 'status', status: 422, body: '{"errors":{"message":"bad"}}' } as const, 'BAD_USER_INPUT', 422],
  ])('%s', async (_name, fault, code, restStatus) => {
    upstream.injectFault(fault, { times: 3 });
    const graphql = await postGraphQL(gateway, `{ transaction(id: "${id()}") { status } }`, { key: KEY });
    expect(graphql.status).toBe(200);
    expect(graphql.body.data).toEqual({ transaction: null });
    expect(codesOf(graphql)).toEqual([code]);
    upstream.clearFaults();
    upstream.injectFault(fault, { times: 3 });
    const { status, body } = await rest(`/transactions/${id()}`);
    expect(status).toBe(restStatus);
    expect(Object.keys(body)).toEqual(['errors']);
  });

  it('answers a message of its own, never the upstream text', async () => {
    upstream.injectFault({ kind: 'status', status: 500, body: '{"errors":{"message":"database on fire"}}' }, { times: 3 });
    const graphql = await postGraphQL(gateway, `{ transaction(id: "${id()}") { status } }`, { key: KEY });
    expect(graphql.body.errors?.[0]?.message).toBe('The service failed to answer (500)');
  });

  it('retries a GET after a 503 and succeeds', async () => {
    upstream.injectFault({ kind: 'status', status: 503 }, { method: 'GET', times: 1 });
    const before = upstream.calls.length;
    const { status, body } = await rest(`/transactions/${id()}`);
    expect(status).toBe(200);
    expect(body.data.transactionId).toBe(id());
    expect(upstream.calls.length - before).toBe(2);
  });

  it('retries a GET after a reset connection', async () => {
    upstream.injectFault({ kind: 'reset' }, { method: 'GET', times: 1 });
    const { status } = await rest(`/transactions/${id()}`);
    expect(status).toBe(200);
  });

  it('gives up after two retries', async () => {
    upstream.injectFault({ kind: 'status', status: 503 }, { method: 'GET', times: 5 });
    const before = upstream.calls.length;
    const { status } = await rest(`/transactions/${id()}`);
    expect(status).toBe(502);
    expect(upstream.calls.length - before).toBe(3);
  });

  it('never retries a PUT', async () => {
    upstream.injectFault({ kind: 'status', status: 503 }, { method: 'PUT', times: 5 });
    const before = upstream.callsTo('PUT', '/transactions').length;
    const { status } = await rest(`/transactions/${id()}/payment`, { method: 'PUT', body: '{"paid":true}' });
    expect(status).toBe(502);
    expect(upstream.callsTo('PUT', '/transactions').length - before).toBe(1);
    const graphql = await postGraphQL(
      gateway,
      `mutation { updateTransactionPayment(transactionId: "${id()}", payment: {paid: true}) { transaction { status } } }`,
      { key: KEY },
    );
    expect(codesOf(graphql)).toEqual(['UPSTREAM_ERROR']);
    expect(upstream.callsTo('PUT', '/transactions').length - before).toBe(2);
  });
});

describe('credentials', () => {
  it("forwards each client's key, without an optional `Bearer `, when the gateway has no key of its own", async () => {
    const id = firstTransaction().transactionId;
    for (const [sent, forwarded] of [
      [KEY, KEY],
      [`Bearer ${KEY}`, KEY],
      ['someone-else', 'someone-else'],
    ]) {
      const before = upstream.calls.length;
      await rest(`/transactions/${id}`, { headers: { authorization: sent! } });
      // The key check (GET /vendings) carries the key too.
      const seen = upstream.calls.slice(before).map((c) => c.authorization);
      expect(seen.length).toBeGreaterThan(0);
      expect(new Set(seen)).toEqual(new Set([forwarded]));
    }
    const refused = await rest(`/transactions/${id}`, { headers: { authorization: 'someone-else' } });
    expect(refused.status).toBe(401);
  });

  it('sends its own key and checks clients against API_KEYS in service mode', async () => {
    const service = await answeringGateway({ BACKEND: 'rest', UPSTREAM_URL: upstream.url, UPSTREAM_API_KEY: KEY, API_KEYS: 'dashboard-1' });
    try {
      const id = firstTransaction().transactionId;
      const before = upstream.calls.length;
      const ok = await service.fetch(`${service.url}/transactions/${id}`, { headers: { authorization: 'dashboard-1' } });
      expect(ok.status).toBe(200);
      expect(upstream.calls.slice(before).map((c) => c.authorization)).toEqual([KEY]);
      const refused = await service.fetch(`${service.url}/transactions/${id}`, { headers: { authorization: KEY } });
      expect(refused.status).toBe(401);
      expect(upstream.calls.length - before).toBe(1);
    } finally {
      await service.close();
    }
  });
});

describe('an upstream that goes away', () => {
  it('fails promptly with UPSTREAM_UNAVAILABLE and recovers when it returns', async () => {
    const flaky = await startStandInUpstream({ keys: [KEY] });
    const port = Number(new URL(flaky.url).port);
    const front = await startForwardGateway(flaky.url);
    try {
      const id = (flaky.transactions[0] as { transactionId: string }).transactionId;
      const query = `{ transaction(id: "${id}") { status } }`;
      expect((await postGraphQL(front, query, { key: KEY })).body.errors).toBeUndefined();
      await flaky.close();
      const started = performance.now();
      const down = await postGraphQL(front, query, { key: KEY });
      expect(performance.now() - started).toBeLessThan(2_000);
      expect(codesOf(down)).toEqual(['UPSTREAM_UNAVAILABLE']);
      const downRest = await front.fetch(`${front.url}/transactions/${id}`, { headers: { authorization: KEY } });
      expect(downRest.status).toBe(502);
      const back = await startStandInUpstream({ keys: [KEY], port });
      try {
        const again = await postGraphQL(front, query, { key: KEY });
        expect(again.body.errors).toBeUndefined();
        expect(again.body.data).toEqual({ transaction: { status: 'active' } });
      } finally {
        await back.close();
      }
    } finally {
      await front.close();
    }
  });
});
