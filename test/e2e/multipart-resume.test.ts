import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildWebhookRequest } from '../../src/events/webhook-request.js';
import { docBlockAfter, reporting, runRecipes, type RecipeProcess } from '../helpers/doc-recipes.js';
import { startGateway, TEST_KEY, type RunningGateway } from '../helpers/gateway.js';
import { startTestRedis, type TestRedis } from '../helpers/redis-server.js';
import { startTcpProxy } from '../helpers/tcp-proxy.js';
import { waitFor } from '../helpers/wait-for.js';

/*
 * Resume over HTTP multipart: docs/subscriptions.md's recipe for Apollo
 * Client's plain HttpLink, run as written (test/helpers/doc-recipes.ts),
 * subscribes again with the last eventId as `after` whenever its stream
 * ends. Two instances share a Redis; the client's instance sits behind a TCP
 * proxy that holds new connections while it restarts (as a load balancer
 * does), and events keep coming through the other one meanwhile: the client
 * gets every event once, in order, across the restart.
 */

const GUIDE = 'docs/subscriptions.md';
const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

let redis: TestRedis;
beforeAll(async () => {
  redis = await startTestRedis();
});
afterAll(async () => {
  await redis?.close();
});

async function gatewayFor(env: Record<string, string>): Promise<RunningGateway> {
  const running = await startGateway({ SIMULATOR: 'off', ...env }, {}, (config) => ({ ...config, shutdownTimeoutMs: 5_000 }));
  cleanups.push(() => running.close());
  return running;
}

/** Posts a `transaction.update` whose status names it. */
async function postUpdate(url: string, status: string): Promise<void> {
  const request = buildWebhookRequest({
    form: 'enveloped',
    id: `evt-${randomUUID()}`,
    transaction: { transactionId: 'multipart-resume-tx', status, products: [] },
  });
  const response = await fetch(`${url}/webhooks`, { method: 'POST', headers: request.headers, body: request.body });
  expect(response.status).toBe(200);
}

describe("Apollo Client's HttpLink (multipart) with the guide's resume recipe", () => {
  it('gets every event once, in order, across a restart of its instance', async () => {
    const env = { REDIS_URL: redis.url, REDIS_PREFIX: `multipart-resume-${randomUUID()}:` };
    let a = await gatewayFor(env);
    const b = await gatewayFor(env);
    const proxy = await startTcpProxy(a.url);
    cleanups.push(() => proxy.close());

    const recipe: RecipeProcess = await runRecipes(
      [
        docBlockAfter(GUIDE, '**Retry a refused connection.**'),
        reporting(docBlockAfter(GUIDE, '**Apollo Client over HTTP multipart**'), 'HttpLink'),
      ],
      proxy.url,
      TEST_KEY,
    );
    cleanups.push(() => recipe.stop());
    const statuses = () =>
      recipe.reports.map(({ result }) => result.data?.transactionUpdated?.status ?? `not an event: ${JSON.stringify(result)}`);
    expect(await waitFor(() => a.gateway.activeSubscriptions() === 1 || recipe.exited() !== undefined, 15_000)).toBe(true);
    expect(recipe.stderr()).toBe('');

    const sent: string[] = [];
    const send = async (count: number) => {
      for (let n = 0; n < count; n++) {
        const status = `s-${sent.length}`;
        await postUpdate(b.url, status);
        sent.push(status);
      }
    };
    await send(3);
    expect(await waitFor(() => recipe.reports.length >= 3, 5_000)).toBe(true);

    // The instance stops (SIGTERM's shutdown) while the balancer holds new connections; events go on through B.
    proxy.target(undefined);
    await a.close();
    await send(4);
    a = await gatewayFor(env);
    proxy.target(a.url);
    expect(await waitFor(() => a.gateway.activeSubscriptions() === 1, 15_000, 50)).toBe(true);
    await send(3);

    expect(await waitFor(() => recipe.reports.length >= sent.length, 10_000)).toBe(true);
    expect(statuses()).toEqual(sent);
    expect(recipe.stderr()).toBe('');
  }, 40_000);
});
