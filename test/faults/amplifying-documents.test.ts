import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, TEST_KEY, type RunningGateway } from '../helpers/gateway.js';
import { codesOf, postGraphQL, type GraphQLResponse } from '../helpers/graphql-client.js';
import { startStandInUpstream, type StandInUpstream } from '../helpers/stand-in-upstream.js';
import { subscribe, wsClient } from '../helpers/ws-client.js';

/*
 * One request cannot buy unbounded upstream work. A list
 * argument's length counts in the operation's cost (literal or through a
 * variable), so an amplifying document is refused before any upstream call;
 * and UPSTREAM_CALLS_PER_REQUEST stops what the cost lets through at run time.
 */
const KEY = 'upstream-key';
let upstream: StandInUpstream;
const gateways: RunningGateway[] = [];

beforeAll(async () => {
  upstream = await startStandInUpstream({ keys: [KEY] });
});
afterAll(async () => {
  await Promise.all(gateways.map((gateway) => gateway.close()));
  await upstream.close();
});

async function gateway(env: Record<string, string> = {}): Promise<RunningGateway> {
  const running = await startGateway({ BACKEND: 'rest', UPSTREAM_URL: upstream.url, UPSTREAM_API_KEY: KEY, ...env });
  gateways.push(running);
  return running;
}

const distinctIds = (prefix: string, count: number) => Array.from({ length: count }, (_, i) => `${prefix}-${i}`);
const knownId = (n: number) => (upstream.transactions[n] as { transactionId: string }).transactionId;

/** Upstream calls made while `work` runs. */
async function upstreamCallsDuring(work: () => Promise<unknown>): Promise<number> {
  const before = upstream.calls.length;
  await work();
  return upstream.calls.length - before;
}

describe('amplifying documents', () => {
  let gw: RunningGateway;
  beforeAll(async () => {
    gw = await gateway();
  });

  it('refuses fifty aliases of transactions(ids:) with 500 distinct ids each, passed as variables, before any upstream call', async () => {
    const aliases = 50;
    const definitions = Array.from({ length: aliases }, (_, a) => `$ids${a}: [ID!]!`).join(', ');
    const fields = Array.from({ length: aliases }, (_, a) => `a${a}: transactions(ids: $ids${a}) { transactionId }`).join(' ');
    const variables = Object.fromEntries(Array.from({ length: aliases }, (_, a) => [`ids${a}`, distinctIds(`t${a}`, 500)]));
    let response!: GraphQLResponse;
    const calls = await upstreamCallsDuring(async () => {
      response = await postGraphQL(gw.url, `query Amplify(${definitions}) { ${fields} }`, { variables });
    });
    expect(calls).toBe(0);
    expect(response.status).toBe(400);
    expect(response.body.data ?? null).toBeNull();
    expect(codesOf(response)).toEqual(['BAD_USER_INPUT']);
    expect(response.body.errors![0]!.message).toMatch(/cost/i);
  });

  it('refuses literal lists that multiply the same way', async () => {
    const ids = (a: number) =>
      distinctIds(`lit${a}`, 300)
        .map((id) => JSON.stringify(id))
        .join(', ');
    const fields = Array.from({ length: 10 }, (_, a) => `a${a}: transactions(ids: [${ids(a)}]) { transactionId status total }`).join(' ');
    let response!: GraphQLResponse;
    const calls = await upstreamCallsDuring(async () => {
      response = await postGraphQL(gw.url, `{ ${fields} }`);
    });
    expect(calls).toBe(0);
    expect(codesOf(response)).toEqual(['BAD_USER_INPUT']);
  });

  it('counts a list passed through a variable the same as one written in the document', async () => {
    const ids = distinctIds('same', 400);
    const selection = '{ transactionId status total customerId products { productId productName quantity lineTotal } }';
    const literal = await postGraphQL(gw.url, `{ transactions(ids: [${ids.map((id) => JSON.stringify(id)).join(', ')}]) ${selection} }`);
    const variable = await postGraphQL(gw.url, `query ($ids: [ID!]!) { transactions(ids: $ids) ${selection} }`, { variables: { ids } });
    expect(codesOf(literal)).toEqual(['BAD_USER_INPUT']);
    const worded = (errors: typeof literal.body.errors) => errors?.map(({ message, extensions }) => ({ message, extensions }));
    expect(worded(variable.body.errors)).toEqual(worded(literal.body.errors));
  });

  it('lets a dashboard query through with the default limits: 50 transactions with their lines, and the fleet', async () => {
    const ids = [...upstream.transactions.map((tx) => tx.transactionId as string), ...distinctIds('unknown', 45)];
    const query = `query Dashboard($ids: [ID!]!) {
      transactions(ids: $ids) {
        transactionId customerId status total
        products { productId productName productPrice productSku quantity lineTotal }
      }
      vendings(first: 20) {
        totalCount
        pageInfo { hasNextPage endCursor }
        nodes { vendingId identifier status online enabled countryCode currencyCode address building productCount }
      }
    }`;
    const response = await postGraphQL(gw.url, query, { variables: { ids } });
    expect(response.body.errors).toBeUndefined();
    expect(response.status).toBe(200);
    const transactions = response.body.data!.transactions as Array<unknown>;
    expect(transactions).toHaveLength(50);
    expect(transactions.filter((tx) => tx !== null)).toHaveLength(upstream.transactions.length);
    expect(response.body.data!.vendings.totalCount).toBe(upstream.vendings.length);
  });
});

describe('UPSTREAM_CALLS_PER_REQUEST', () => {
  const LIMIT = 5;
  let gw: RunningGateway;
  beforeAll(async () => {
    gw = await gateway({ UPSTREAM_CALLS_PER_REQUEST: String(LIMIT) });
  });

  it('makes at most that many upstream calls for one request, and names the limit on the fields past it', async () => {
    const ids = [knownId(0), knownId(1), ...distinctIds('budget', 6)];
    let response!: GraphQLResponse;
    const calls = await upstreamCallsDuring(async () => {
      response = await postGraphQL(gw.url, `query ($ids: [ID!]!) { transactions(ids: $ids) { transactionId } }`, { variables: { ids } });
    });
    expect(calls).toBe(LIMIT);
    expect(response.status).toBe(200);
    const refused = response.body.errors ?? [];
    expect(refused).toHaveLength(ids.length - LIMIT);
    for (const error of refused) {
      expect(error.extensions).toMatchObject({ code: 'BAD_USER_INPUT', limit: 'UPSTREAM_CALLS_PER_REQUEST' });
      expect(error.message).toMatch(/UPSTREAM_CALLS_PER_REQUEST/);
      expect(error.path?.[0]).toBe('transactions');
    }
  });

  it('gives every request its own budget', async () => {
    for (let i = 0; i < 3; i++) {
      const response = await postGraphQL(
        gw.url,
        `{ a: transaction(id: "${knownId(0)}") { status } b: transaction(id: "${knownId(1)}") { status } }`,
      );
      expect(response.body.errors).toBeUndefined();
    }
  });

  it('holds for queries over WebSocket too', async () => {
    const client = wsClient(gw.url, TEST_KEY);
    try {
      const ids = distinctIds('ws-budget', LIMIT + 3);
      let result!: Awaited<ReturnType<ReturnType<typeof subscribe>['next']>>;
      const calls = await upstreamCallsDuring(async () => {
        result = await subscribe(client, `query ($ids: [ID!]!) { transactions(ids: $ids) { transactionId } }`, { ids }).next(10_000);
      });
      expect(calls).toBe(LIMIT);
      const limited = (result.errors ?? []).filter(
        (error) => (error.extensions as { limit?: string } | undefined)?.limit === 'UPSTREAM_CALLS_PER_REQUEST',
      );
      expect(limited).toHaveLength(3);
    } finally {
      await client.dispose();
    }
  });
});
