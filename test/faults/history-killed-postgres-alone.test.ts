import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildWebhookRequest } from '../../src/events/webhook-request.js';
import { TransactionStatsDocument } from '../../src/graphql/generated/operations.js';
import { startGateway, TEST_KEY, type RunningGateway } from '../helpers/gateway.js';
import { startGatewayProcess, type GatewayProcess } from '../helpers/gateway-process.js';
import { postGraphQL } from '../helpers/graphql-client.js';
import { testDatabase, type TestDatabase } from '../helpers/postgres.js';
import { freePort } from '../helpers/redis-server.js';
import { sseSubscribe } from '../helpers/sse-client.js';
import { runOperation } from '../helpers/typed-client.js';

/*
 * DATABASE_URL without Redis: PostgreSQL is where the deployment keeps its
 * events, so a webhook's 200 means its event is committed there. A real
 * process (`node dist/main.js`) takes a burst of webhooks, 16 in flight, and
 * is killed with SIGKILL right after the last 200; a new instance on the same
 * database must list every acknowledged status and count, give a dashboard
 * that resumes from before the kill every event it missed, once, and
 * recognise a redelivery of each: answered 200, published to no subscriber
 * again.
 */

const TRANSACTIONS = 100;
const IN_FLIGHT = 16;
/** Only a safety net against a gateway that never answers; nothing here measures speed. */
const GIVE_UP_MS = 30_000;

describe('an instance with PostgreSQL alone, killed right after its last 200', () => {
  let database: TestDatabase;
  let killed: GatewayProcess | undefined;
  let next: RunningGateway | undefined;
  beforeAll(async () => {
    database = await testDatabase();
  });
  afterAll(async () => {
    await killed?.stop('SIGKILL');
    await next?.close();
    await database?.drop();
  });

  it('lost nothing it acknowledged: the next instance lists every status and count', async () => {
    killed = await startGatewayProcess(await freePort(), { DATABASE_URL: database.url });
    const run = randomUUID().slice(0, 8);
    const ids = Array.from({ length: TRANSACTIONS }, (_, n) => `k${n}-${run}`);
    let target = killed.url;
    /** Sends until answered 200 (a 503 is the sender's cue to retry, as the service does). */
    const acknowledge = async (transactionId: string, status: string) => {
      const request = buildWebhookRequest({
        form: 'enveloped',
        id: `${transactionId}-${status}`,
        transaction: { transactionId, status, products: [{ productId: 'p1', productName: 'Water', productPrice: 2, quantity: 1 }] },
      });
      for (const deadline = Date.now() + GIVE_UP_MS; Date.now() < deadline;) {
        const answer = await fetch(`${target}/webhooks`, { method: 'POST', headers: request.headers, body: request.body });
        await answer.arrayBuffer();
        if (answer.status === 200) return;
        expect(answer.status).toBe(503);
      }
      throw new Error(`${transactionId} ${status} was never acknowledged`);
    };
    // A dashboard watching from the start: the first event's position is where it resumes from after the kill.
    const watcher = await sseSubscribe(killed.url, 'subscription { transactionUpdated { eventId } }', TEST_KEY);
    const firstSent = ids[0]!;
    await acknowledge(firstSent, 'pending');
    expect((await watcher.next(10_000)).data.transactionUpdated.eventId).toBe(`${firstSent}-pending`);
    const resumeFrom = watcher.lastEventId()!;
    watcher.close();
    let taken = 0;
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        while (taken < ids.length) {
          const transactionId = ids[taken++]!;
          if (transactionId !== firstSent) await acknowledge(transactionId, 'pending');
          await acknowledge(transactionId, 'completed');
        }
      }),
    );
    await killed.stop('SIGKILL');

    next = await startGateway({ DATABASE_URL: database.url });
    const query = 'query { recentTransactions(first: 100) { edges { node { transactionId status history { eventId } } } } }';
    const { body } = await postGraphQL(next.url, query, { key: TEST_KEY });
    const listed = new Map(
      (body.data?.recentTransactions.edges as Array<{ node: { transactionId: string; status: string; history: unknown[] } }>).map(
        ({ node }) => [node.transactionId, `${node.status} after ${node.history.length} events`],
      ),
    );
    const missing = ids.filter((id) => listed.get(id) !== 'completed after 2 events');
    expect(missing, `${missing.length} of ${TRANSACTIONS} not as acknowledged`).toEqual([]);
    const stats = await runOperation(next.url, TransactionStatsDocument, {});
    expect(stats.data?.transactionStats.byStatus).toEqual([{ status: 'completed', count: TRANSACTIONS }]);

    // The dashboard comes back to the new instance, resuming after the first event: it gets every other one, once.
    const resumed = await sseSubscribe(next.url, 'subscription { transactionUpdated { eventId } }', TEST_KEY, undefined, {
      'last-event-id': resumeFrom,
    });
    const missed: string[] = [];
    for (let n = 0; n < 2 * TRANSACTIONS - 1; n += 1) missed.push((await resumed.next(10_000)).data.transactionUpdated.eventId);
    resumed.close();
    expect(missed.length).toBe(new Set(missed).size);
    expect(new Set(missed)).toEqual(
      new Set(ids.flatMap((id) => [`${id}-pending`, `${id}-completed`]).filter((id) => id !== `${firstSent}-pending`)),
    );
    // Each transaction's pending before its completed, as acknowledged.
    for (const id of ids) if (id !== firstSent) expect(missed.indexOf(`${id}-pending`)).toBeLessThan(missed.indexOf(`${id}-completed`));

    // The service sends each again (it never saw some of the 200s, say): all recognised, none published again.
    target = next.url;
    const live = await sseSubscribe(next.url, 'subscription { transactionUpdated { transactionId eventId } }', TEST_KEY);
    for (const transactionId of ids) {
      await acknowledge(transactionId, 'pending');
      await acknowledge(transactionId, 'completed');
    }
    const sentinel = `sentinel-${run}`;
    await acknowledge(sentinel, 'completed');
    expect((await live.next(10_000)).data.transactionUpdated.transactionId).toBe(sentinel);
    live.close();
  }, 90_000);
});
