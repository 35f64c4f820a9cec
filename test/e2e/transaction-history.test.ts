import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildWebhookRequest, type WebhookRequest } from '../../src/events/webhook-request.js';
import {
  RecentTransactionsDocument,
  TransactionHistoryDocument,
  TransactionStatsDocument,
} from '../../src/graphql/generated/operations.js';
import { startGateway, TEST_KEY, type RunningGateway } from '../helpers/gateway.js';
import { codesOf, postGraphQL } from '../helpers/graphql-client.js';
import { runOperation } from '../helpers/typed-client.js';
import { historyScenario, type Poster } from '../helpers/history-scenario.js';
import { startStandInUpstream } from '../helpers/stand-in-upstream.js';
import { deliverWebhook, redisDeployments, type RedisDeployments } from '../helpers/redis-deployment.js';

/*
 * The transaction history over real HTTP: webhooks in, with
 * redeliveries, late events and flip-flops; recentTransactions,
 * transactionStats and Transaction.history out, compared with what the
 * series says they must be. In PostgreSQL: history-postgres.test.ts.
 */

let gateway: RunningGateway;
let startedBefore = 0;
beforeAll(async () => {
  startedBefore = Date.now();
  gateway = await startGateway();
});
afterAll(() => gateway.close());

const post: Poster = async (request: WebhookRequest) => {
  const response = await fetch(`${gateway.url}/webhooks`, { method: 'POST', headers: request.headers, body: request.body });
  return response.status;
};

describe('transaction history (in process)', () => {
  it('holds what a series of webhooks with redeliveries, late events and flip-flops says, and payment updates', async () => {
    await historyScenario([gateway], post);
  });

  it('pages with cursors that stay right while new events arrive between pages', async () => {
    const status = `paging-${randomUUID()}`;
    const ids = Array.from({ length: 5 }, (_, i) => `page-${i}-${randomUUID()}`);
    for (const id of ids)
      expect(await post(buildWebhookRequest({ form: 'enveloped', transaction: { transactionId: id, status, products: [] } }))).toBe(200);
    const first = await runOperation(gateway.url, RecentTransactionsDocument, { first: 2, status: [status] });
    expect(first.data?.recentTransactions.edges.map((e) => e.node.transactionId)).toEqual([ids[4], ids[3]]);
    expect(first.data?.recentTransactions.totalCount).toBe(5);
    // ids[0] moves to the top between pages: the next page goes on below ids[3], without it or a repeat.
    expect(
      await post(
        buildWebhookRequest({ form: 'enveloped', transaction: { transactionId: ids[0]!, status, products: [{ productId: 'x' }] } }),
      ),
    ).toBe(200);
    const second = await runOperation(gateway.url, RecentTransactionsDocument, {
      first: 10,
      status: [status],
      after: first.data?.recentTransactions.pageInfo.endCursor,
    });
    expect(second.data?.recentTransactions.edges.map((e) => e.node.transactionId)).toEqual([ids[2], ids[1]]);
    expect(second.data?.recentTransactions.pageInfo.hasNextPage).toBe(false);
  });

  it('takes no transaction whose id no cursor or read could name ("." or "..")', async () => {
    for (const transactionId of ['.', '..']) {
      const request = buildWebhookRequest({ form: 'enveloped', transaction: { transactionId, status: 'pending', products: [] } });
      expect(await post(request), transactionId).toBe(400);
    }
  });

  it('answers bounds with BAD_USER_INPUT', async () => {
    const cases: Array<[string, Record<string, unknown>]> = [
      ['query { recentTransactions(first: 101) { totalCount } }', {}],
      ['query { recentTransactions(after: "not-a-cursor") { totalCount } }', {}],
      [
        'query($s: DateTime, $u: DateTime) { recentTransactions(since: $s, until: $u) { totalCount } }',
        { s: '2026-01-02T00:00:00Z', u: '2026-01-01T00:00:00Z' },
      ],
      ['query { transactionStats(since: "2026-01-01T00:00:00Z", until: "2026-01-03T00:00:00Z", interval: MINUTE) { count } }', {}],
      ['query { transactionStats { topProductsByAmount(first: 1000) { productId } } }', {}],
    ];
    for (const [query, variables] of cases) {
      const response = await postGraphQL(gateway.url, query, { variables });
      expect(codesOf(response), query).toEqual(['BAD_USER_INPUT']);
      expect(response.body.errors?.[0]?.message).not.toMatch(/at .*\.ts|Error:/);
    }
  });

  it('is never served from the response cache (CACHE_TTL_MS)', async () => {
    const cached = await startGateway({ CACHE_TTL_MS: '60000' });
    try {
      const status = `cache-${randomUUID()}`;
      const count = async () =>
        (await runOperation(cached.url, RecentTransactionsDocument, { status: [status] })).data?.recentTransactions.totalCount;
      expect(await count()).toBe(0);
      const request = buildWebhookRequest({ form: 'enveloped', transaction: { transactionId: `c-${randomUUID()}`, status, products: [] } });
      expect((await fetch(`${cached.url}/webhooks`, { method: 'POST', headers: request.headers, body: request.body })).status).toBe(200);
      expect(await count()).toBe(1);
    } finally {
      await cached.close();
    }
  });

  it('records a REST payment on a transaction it never saw, reading it back once from the service', async () => {
    const upstream = await startStandInUpstream();
    const rest = await startGateway({ BACKEND: 'rest', UPSTREAM_URL: upstream.url, UPSTREAM_API_KEY: 'upstream-key' });
    try {
      const id = String(upstream.transactions[0]!.transactionId);
      const put = await fetch(`${rest.url}/transactions/${id}/payment`, {
        method: 'PUT',
        headers: { authorization: TEST_KEY, 'content-type': 'application/json' },
        body: '{"wallet":"apple_pay","paymentStatus":"captured"}',
      });
      expect(put.status).toBe(200);
      expect(upstream.callsTo('GET', `/transactions/${id}`)).toHaveLength(1);
      const recent = await runOperation(rest.url, RecentTransactionsDocument, { first: 1 });
      expect(recent.data?.recentTransactions.edges.map((e) => [e.node.transactionId, e.node.status])).toEqual([
        [id, upstream.transactions[0]!.status],
      ]);
      const history = await runOperation(rest.url, TransactionHistoryDocument, { id });
      expect(history.data?.transaction?.paymentUpdates?.map((p) => p.fields)).toEqual([['paymentStatus', 'wallet']]);
      expect(history.data?.transaction?.history).toEqual([
        { status: upstream.transactions[0]!.status, at: history.data?.transaction?.firstSeen, eventId: null },
      ]);
      // A second payment finds the record: no read back.
      const reads = upstream.callsTo('GET', `/transactions/${id}`).length;
      await fetch(`${rest.url}/transactions/${id}/payment`, {
        method: 'PUT',
        headers: { authorization: TEST_KEY, 'content-type': 'application/json' },
        body: '{"paymentStatus":"refunded"}',
      });
      expect(upstream.callsTo('GET', `/transactions/${id}`)).toHaveLength(reads);
    } finally {
      await rest.close();
      await upstream.close();
    }
  });

  it('says from when it covers (coveredSince): here, since the gateway started', async () => {
    const asked = Date.now();
    const { body } = await postGraphQL(
      gateway.url,
      '{ recentTransactions(first: 0) { coveredSince } transactionStats(interval: DAY) { since coveredSince } }',
    );
    const data = body.data;
    const covered = Date.parse(data?.recentTransactions.coveredSince);
    expect(covered).toBeGreaterThanOrEqual(startedBefore);
    expect(covered).toBeLessThanOrEqual(asked);
    expect(data?.transactionStats.coveredSince).toBe(data?.recentTransactions.coveredSince);
    // A week by day starts long before this gateway did: the answer says so.
    expect(Date.parse(data?.transactionStats.since)).toBeLessThan(covered);
  });

  it('says so when HISTORY=off', async () => {
    const off = await startGateway({ HISTORY: 'off' });
    try {
      const recent = await runOperation(off.url, RecentTransactionsDocument, {});
      expect(recent.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
      expect(recent.errors?.[0]?.message).toMatch(/HISTORY=off/);
      const stats = await runOperation(off.url, TransactionStatsDocument, {});
      expect(stats.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
      const id = `off-${randomUUID()}`;
      const request = buildWebhookRequest({ form: 'enveloped', transaction: { transactionId: id, status: 'pending', products: [] } });
      expect((await fetch(`${off.url}/webhooks`, { method: 'POST', headers: request.headers, body: request.body })).status).toBe(200);
      // The memory backend stores the webhook's transaction; its history is empty with the history off.
      let history = await runOperation(off.url, TransactionHistoryDocument, { id }, TEST_KEY);
      for (let tries = 0; history.errors && tries < 50; tries += 1)
        history = await runOperation(off.url, TransactionHistoryDocument, { id }, TEST_KEY);
      expect(history.data?.transaction).toMatchObject({ history: [], firstSeen: null, paymentUpdates: [] });
    } finally {
      await off.close();
    }
  });
});

describe('transaction history with Redis and without DATABASE_URL', () => {
  let deployments: RedisDeployments;
  beforeAll(async () => {
    deployments = await redisDeployments();
  });
  afterAll(() => deployments.close());

  it('is in each instance, fed from the shared log: every instance holds the events any of them received, once', async () => {
    const [a, b] = await deployments.start(2);
    const status = `shared-log-${randomUUID()}`;
    const ids = [`x-${randomUUID()}`, `y-${randomUUID()}`];
    // One webhook to each instance, and a redelivery of the first to the other one.
    const first = buildWebhookRequest({
      form: 'enveloped',
      id: `e1-${status}`,
      transaction: { transactionId: ids[0]!, status, products: [] },
    });
    expect((await deliverWebhook(a!, first)).status).toBe(200);
    expect(
      (
        await deliverWebhook(
          b!,
          buildWebhookRequest({ form: 'enveloped', id: `e2-${status}`, transaction: { transactionId: ids[1]!, status, products: [] } }),
        )
      ).status,
    ).toBe(200);
    expect((await deliverWebhook(b!, first)).status).toBe(200);
    for (const gateway of [a!, b!]) {
      let page = await runOperation(gateway.url, RecentTransactionsDocument, { status: [status] });
      for (let tries = 0; page.data?.recentTransactions.totalCount !== 2 && tries < 100; tries += 1) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        page = await runOperation(gateway.url, RecentTransactionsDocument, { status: [status] });
      }
      expect(page.data?.recentTransactions.edges.map((e) => e.node.transactionId)).toEqual([ids[1], ids[0]]);
      const history = await postGraphQL(
        gateway.url,
        'query($s: [String!]) { recentTransactions(status: $s) { edges { node { transactionId history { eventId } } } } }',
        { variables: { s: [status] } },
      );
      expect(history.body.data?.recentTransactions.edges.map((e: { node: { history: unknown[] } }) => e.node.history.length)).toEqual([
        1, 1,
      ]);
    }
  });
});
