import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildWebhookRequest, type WebhookRequest } from '../../src/events/webhook-request.js';
import { RecentTransactionsDocument, TransactionHistoryDocument, TransactionStatsDocument } from '../../src/graphql/generated/operations.js';
import { startGateway, TEST_KEY, type RunningGateway } from '../helpers/gateway.js';
import { codesOf, postGraphQL } from '../helpers/graphql-client.js';
import { runOperation } from '../helpers/typed-client.js';
import { historyScenario, type Poster } from '../helpers/history-scenario.js';
import { startStandInUpstream } from '../helpers/stand-in-upstream.js';
import { deliverWebhook, redisDeployments, type RedisDeployments } from '../helpers/redis-deployment.js';
import { redisServerOnPath, startTestRedis } from '../helpers/redis-server.js';

/*
 * The transaction history over real HTTP: webhooks in, with
 * redeliveries, late events and flip-flops; recentTransactions,
 * transactionStats and Transaction.history out, compared with what the
 * series says they must be.
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
    for (const id of ids) expect(await post(buildWebhookRequest({ form: 'enveloped', transaction: { transactionId: id, status, products: [] } }))).toBe(200);
    const first = await runOperation(gateway.url, RecentTransactionsDocument, { first: 2, status: [status] });
    expect(first.data?.recentTransactions.edges.map((e) => e.node.transactionId)).toEqual([ids[4], ids[3]]);
    expect(first.data?.recentTransactions.totalCount).toBe(5);
    // ids[0] moves to the top between pages: the next page goes on below ids[3], without it or a repeat.
    expect(await post(buildWebhookRequest({ form: 'enveloped', transaction: { transactionId: ids[0]!, status, products: [{ productId: 'x' }] } }))).toBe(200);
    const second = await runOperation(gateway.url, RecentTransactionsDocument, { first: 10, status: [status], after: first.data?.recentTransactions.pageInfo.endCursor });
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
      ['query($s: DateTime, $u: DateTime) { recentTransactions(since: $s, until: $u) { totalCount } }', { s: '2026-01-02T00:00:00Z', u: '2026-01-01T00:00:00Z' }],
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
      const count = async () => (await runOperation(cached.url, RecentTransactionsDocument, { status: [status] })).data?.recentTransactions.totalCount;
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
      const put = await fetch(`${rest.url}/transactions/${id}/payment`, { method: 'PUT', headers: { authorization: TEST_KEY, 'content-type': 'application/json' }, body: '{"wallet":"apple_pay","paymentStatus":"captured"}' });
      expect(put.status).toBe(200);
      expect(upstream.callsTo('GET', `/transactions/${id}`)).toHaveLength(1);
      const recent = await runOperation(rest.url, RecentTransactionsDocument, { first: 1 });
      expect(recent.data?.recentTransactions.edges.map((e) => [e.node.transactionId, e.node.status])).toEqual([[id, upstream.transactions[0]!.status]]);
      const history = await runOperation(rest.url, TransactionHistoryDocument, { id });
      expect(history.data?.transaction?.paymentUpdates?.map((p) => p.fields)).toEqual([['paymentStatus', 'wallet']]);
      expect(history.data?.transaction?.history).toEqual([{ status: upstream.transactions[0]!.status, at: history.data?.transaction?.firstSeen, eventId: null }]);
      // A second payment finds the record: no read back.
      const reads = upstream.callsTo('GET', `/transactions/${id}`).length;
      await fetch(`${rest.url}/transactions/${id}/payment`, { method: 'PUT', headers: { authorization: TEST_KEY, 'content-type': 'application/json' }, body: '{"paymentStatus":"refunded"}' });
      expect(upstream.callsTo('GET', `/transactions/${id}`)).toHaveLength(reads);
    } finally {
      await rest.close();
      await upstream.close();
    }
  });

  it('says from when it covers (coveredSince): here, since the gateway started', async () => {
    const asked = Date.now();
    const { body } = await postGraphQL(gateway.url, '{ recentTransactions(first: 0) { coveredSince } transactionStats(interval: DAY) { since coveredSince } }');
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
      for (let tries = 0; history.errors && tries < 50; tries += 1) history = await runOperation(off.url, TransactionHistoryDocument, { id }, TEST_KEY);
      expect(history.data?.transaction).toMatchObject({ history: [], firstSeen: null, paymentUpdates: [] });
    } finally {
      await off.close();
    }
  });
});

describe('transaction history shared through Redis', () => {
  let deployments: RedisDeployments;
  beforeAll(async () => {
    deployments = await redisDeployments();
  });
  afterAll(() => deployments.close());

  it('says the same on two instances, whichever received each webhook, and after a restart', async () => {
    const prefix = `history-${randomUUID()}:`;
    const [a, b] = await deployments.start(2, { REDIS_PREFIX: prefix });
    const instances = [a!, b!];
    // Webhooks alternate between the instances: every redelivery reaches the other one than its first delivery.
    await historyScenario(instances, async (request, index = 0) => (await deliverWebhook(instances[index % 2]!, request)).status);
    const before = await runOperation(a!.url, RecentTransactionsDocument, { first: 100 });
    // An instance started afresh on the deployment reads what Redis holds.
    const [restarted] = await deployments.start(1, { REDIS_PREFIX: prefix });
    const after = await runOperation(restarted!.url, RecentTransactionsDocument, { first: 100 });
    expect(after.data).toEqual(before.data);
    expect(after.data?.recentTransactions.totalCount).toBeGreaterThanOrEqual(3);
    // Coverage starts at the deployment's first write, not at an instance's start.
    const covered = async (url: string) => (await runOperation(url, TransactionStatsDocument, {})).data?.transactionStats.coveredSince;
    expect(await covered(restarted!.url)).toBe(await covered(a!.url));
  });
});

describe('transaction history while Redis does not answer', () => {
  it.runIf(redisServerOnPath())('answers UPSTREAM_UNAVAILABLE on its own fields and serves the rest', async () => {
    const redis = await startTestRedis();
    const gateway = await startGateway({ REDIS_URL: redis.url, REDIS_PREFIX: `stall-${randomUUID()}:` }, {}, (config) => ({ ...config, redisCommandTimeoutMs: 300 }));
    try {
      const id = `stall-${randomUUID()}`;
      const request = buildWebhookRequest({ form: 'enveloped', transaction: { transactionId: id, status: 'pending', products: [] } });
      expect((await fetch(`${gateway.url}/webhooks`, { method: 'POST', headers: request.headers, body: request.body })).status).toBe(200);
      let known = await runOperation(gateway.url, TransactionHistoryDocument, { id });
      for (let tries = 0; known.errors && tries < 50; tries += 1) known = await runOperation(gateway.url, TransactionHistoryDocument, { id });
      expect(known.data?.transaction?.history).toHaveLength(1);
      redis.pause();
      const recent = await runOperation(gateway.url, RecentTransactionsDocument, {});
      expect(recent.errors?.map((e) => [e.extensions?.code, e.message])).toEqual([['UPSTREAM_UNAVAILABLE', 'The transaction history cannot be read right now (its store does not answer); retry later']]);
      // The transaction itself is still served; only its history fields are missing.
      const detail = await runOperation(gateway.url, TransactionHistoryDocument, { id });
      expect(detail.data?.transaction).toMatchObject({ transactionId: id, status: 'pending', history: null, paymentUpdates: null });
      expect(detail.errors?.every((e) => e.extensions?.code === 'UPSTREAM_UNAVAILABLE')).toBe(true);
    } finally {
      redis.resume();
      await gateway.close();
      await redis.close();
    }
  });
});
