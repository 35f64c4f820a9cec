import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildWebhookRequest } from '../../src/events/webhook-request.js';
import { RecentTransactionsDocument, TransactionStatsDocument } from '../../src/graphql/generated/operations.js';
import { startGateway, TEST_KEY, type RunningGateway } from '../helpers/gateway.js';
import { postGraphQL } from '../helpers/graphql-client.js';
import { testDatabase, type TestDatabase } from '../helpers/postgres.js';
import { startTestRedis, type TestRedis } from '../helpers/redis-server.js';
import { redisKeys } from '../../src/redis/redis-keys.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { runOperation } from '../helpers/typed-client.js';
import { waitFor } from '../helpers/wait-for.js';

/*
 * Exactly once across a crash: an instance (a real process, `node dist/main.js`)
 * admits webhooks while PostgreSQL does not answer it (its connections go
 * through a proxy that holds them), so it holds them read from the history's
 * queue and unapplied, and is killed with SIGKILL at that point. Another
 * instance of the deployment then takes them over and applies each once.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** Only a safety net against a hung child; nothing here measures speed. */
const GIVE_UP_MS = 30_000;

describe('an instance killed between admitting events and applying them to the history', () => {
  let database: TestDatabase;
  let redis: TestRedis;
  let proxy: TcpProxy;
  let child: ChildProcess | undefined;
  let other: RunningGateway | undefined;
  let client: Redis;
  beforeAll(async () => {
    database = await testDatabase();
    redis = await startTestRedis();
    client = new Redis(redis.url);
    const port = new URL(database.url).port || '5432';
    proxy = await startTcpProxy(`http://127.0.0.1:${port}`);
  });
  afterAll(async () => {
    child?.kill('SIGKILL');
    await other?.close();
    client?.disconnect();
    await proxy?.close();
    await redis?.close();
    await database?.drop();
  });

  it('leaves them to another instance, which applies each once', async () => {
    const prefix = `killed-${randomUUID()}:`;
    const throughProxy = new URL(database.url);
    throughProxy.port = new URL(proxy.url).port;
    child = spawn(process.execPath, ['dist/main.js'], {
      cwd: ROOT,
      env: {
        ...process.env,
        PORT: '0',
        HOST: '127.0.0.1',
        API_KEYS: TEST_KEY,
        LOG_LEVEL: 'info',
        REDIS_URL: redis.url,
        REDIS_PREFIX: prefix,
        DATABASE_URL: throughProxy.toString(),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr!.resume();
    expect(await waitFor(() => /"url":"http[^"]+"/.test(stdout), GIVE_UP_MS, 50), stdout).toBe(true);
    const url = /"url":"(http[^"]+)"/.exec(stdout)![1]!;

    proxy.cut();
    const run = randomUUID().slice(0, 8);
    const ids = [`a-${run}`, `b-${run}`, `c-${run}`] as const;
    const sent: Array<[string, string, string]> = [
      [ids[0], 'pending', `${run}-1`],
      [ids[0], 'completed', `${run}-2`],
      [ids[1], 'pending', `${run}-3`],
      [ids[0], 'completed', `${run}-2`], // a redelivery: not admitted
      [ids[2], 'failed', `${run}-4`],
      [ids[1], 'completed', `${run}-5`],
    ];
    for (const [transactionId, status, id] of sent) {
      const request = buildWebhookRequest({
        form: 'enveloped',
        id,
        transaction: { transactionId, status, products: [{ productId: 'p1', productName: 'Water', productPrice: 2, quantity: 1 }] },
      });
      expect((await fetch(`${url}/webhooks`, { method: 'POST', headers: request.headers, body: request.body })).status).toBe(200);
    }
    // Five events admitted, stored once, in the log the history's group reads; the instance read the first and holds it, unapplied (pending
    // under it in the group).
    const queue = redisKeys(prefix).stream;
    expect(Number(await client.xlen(queue))).toBe(5);
    expect(await client.exists(redisKeys(prefix).historyQueue)).toBe(0);
    const pending = async () => Number(((await client.xpending(queue, 'history')) as [number])[0]);
    let held = 0;
    for (
      const deadline = Date.now() + GIVE_UP_MS;
      held === 0 && Date.now() < deadline;
      await new Promise((resolve) => setTimeout(resolve, 50))
    )
      held = await pending();
    expect(held).toBeGreaterThan(0);
    child.kill('SIGKILL');
    await new Promise((resolve) => child!.once('exit', resolve));

    other = await startGateway({ REDIS_URL: redis.url, REDIS_PREFIX: prefix, DATABASE_URL: database.url }, {}, (config) => ({
      ...config,
      postgresHistory: { ...config.postgresHistory, claimIdleMs: 200 },
    }));
    // Nothing left for the history: no entry pending, none unread; the log keeps them for resuming.
    const left = async () => {
      const [group] = (await client.xinfo('GROUPS', queue)) as unknown[][];
      return Number(group![group!.indexOf('pending') + 1]) + Number(group![group!.indexOf('lag') + 1]);
    };
    let behind = -1;
    for (
      const deadline = Date.now() + GIVE_UP_MS;
      behind !== 0 && Date.now() < deadline;
      await new Promise((resolve) => setTimeout(resolve, 50))
    )
      behind = await left();
    expect(behind).toBe(0);
    expect(Number(await client.xlen(queue))).toBe(5);

    const recent = await runOperation(other.url, RecentTransactionsDocument, { first: 10 });
    expect(recent.data?.recentTransactions.edges.map((e) => [e.node.transactionId, e.node.status]).sort()).toEqual([
      [ids[0], 'completed'],
      [ids[1], 'completed'],
      [ids[2], 'failed'],
    ]);
    // This instance's demo backend never saw the transactions (the webhooks went to the other): the history's own nodes say it.
    const query = 'query { recentTransactions(first: 10) { edges { node { transactionId history { eventId } } } } }';
    const nodes = (await postGraphQL(other.url, query)).body.data?.recentTransactions.edges.map((e: { node: unknown }) => e.node);
    expect(nodes).toEqual(
      expect.arrayContaining([
        { transactionId: ids[0], history: [{ eventId: `${run}-1` }, { eventId: `${run}-2` }] },
        { transactionId: ids[1], history: [{ eventId: `${run}-3` }, { eventId: `${run}-5` }] },
        { transactionId: ids[2], history: [{ eventId: `${run}-4` }] },
      ]),
    );
    const stats = await runOperation(other.url, TransactionStatsDocument, {});
    expect(stats.data?.transactionStats.byStatus).toEqual([
      { status: 'completed', count: 2 },
      { status: 'failed', count: 1 },
    ]);
    // Totals per currency: these webhooks name none, so all are in DEFAULT_CURRENCY.
    expect(stats.data?.transactionStats.byCurrency.map((entry) => [entry.currency, entry.byStatus])).toEqual([
      [
        'EUR',
        [
          { status: 'completed', count: 2, total: 4 },
          { status: 'failed', count: 1, total: 2 },
        ],
      ],
    ]);
  }, 60_000);
});
