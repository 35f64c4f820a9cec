import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildWebhookRequest } from '../../src/events/webhook-request.js';
import { startGateway, TEST_KEY, type RunningGateway } from '../helpers/gateway.js';
import { startGatewayProcess, type GatewayProcess } from '../helpers/gateway-process.js';
import type { RecordingClient } from '../helpers/real-clients.js';
import { deliverWebhook } from '../helpers/redis-deployment.js';
import { freePort, startTestRedis, type TestRedis } from '../helpers/redis-server.js';
import {
  apolloRecipe,
  browserRecipes,
  eventSourceRecipe,
  graphqlSseRecipe,
  graphqlWsRecipe,
  urqlSseRecipe,
  urqlWsRecipe,
} from '../helpers/resume-recipes.js';
import { chromiumFor } from '../helpers/browser.js';
import { waitFor } from '../helpers/wait-for.js';

/*
 * The resume recipes of docs/subscriptions.md with each library's real code,
 * as a dashboard developer runs them: two instances sharing Redis and no load
 * balancer, the clients on A (a process of its own), the service's webhooks
 * on B. A is restarted in the middle of the series, gracefully (SIGTERM) or
 * with `kill -9`, on the same port (the browser's clients run in Chromium,
 * when it is installed); the clients reconnect by themselves and
 * every one of them must receive the 40 events once each, in order: those
 * sent before, while A was down, and while they were coming back.
 */

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

const inChromium = chromiumFor('the browser resume recipes');
const recipes = [apolloRecipe, urqlWsRecipe, urqlSseRecipe, graphqlWsRecipe, graphqlSseRecipe, eventSourceRecipe];

/** Subscribers open on a gateway process, read from its metrics. */
async function activeSubscriptions(url: string): Promise<number> {
  const text = await fetch(`${url}/metrics`).then(
    (response) => response.text(),
    () => '',
  );
  const line = text.split('\n').find((row) => /^\w*active_subscriptions /.test(row));
  return line ? Number(line.split(' ')[1]) : -1;
}

async function waitForSubscribers(url: string, count: number): Promise<boolean> {
  for (const deadline = Date.now() + 30_000; Date.now() < deadline;) {
    if ((await activeSubscriptions(url)) === count) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return false;
}

const statuses = (client: RecordingClient) => client.received.map((update) => update.status);

describe.each(['SIGTERM', 'SIGKILL'] as const)('resume recipes across a restart of their instance (%s)', (how) => {
  it(
    'Apollo Client, urql over graphql-ws and graphql-sse, graphql-ws, graphql-sse, EventSource and Chromium ' +
      'each get all 40 events once',
    async () => {
      const env = { REDIS_URL: redis.url, REDIS_PREFIX: `recipes-${randomUUID()}:` };
      const b: RunningGateway = await startGateway(env);
      cleanups.push(() => b.close());
      const port = await freePort();
      let a: GatewayProcess = await startGatewayProcess(port, env);
      cleanups.push(() => a.stop('SIGKILL'));
      const clients = recipes.map((recipe) => recipe(a.url, TEST_KEY));
      cleanups.push(() => clients.forEach((client) => client.close()));
      if (inChromium) {
        const browser = await browserRecipes(a.url, TEST_KEY);
        cleanups.push(() => browser.close());
        clients.push(...browser.clients);
      }
      expect(await waitForSubscribers(a.url, clients.length)).toBe(true);

      const sent: string[] = [];
      const send = async (count: number) => {
        for (let i = 0; i < count; i++) {
          const status = `s-${sent.length}`;
          const request = buildWebhookRequest({
            form: 'enveloped',
            transaction: { transactionId: 'recipe-tx', status, products: [] },
            id: `evt-${randomUUID()}`,
          });
          expect((await deliverWebhook(b, request)).status).toBe(200);
          sent.push(status);
        }
      };
      const everyoneHas = (count: number) => () => clients.every((client) => client.received.length >= count);

      await send(10);
      expect(await waitFor(everyoneHas(10), 10_000)).toBe(true);
      await a.stop(how);
      // While A is down its clients find nothing on its port (refused connections), and the webhooks go on.
      await send(15);
      a = await startGatewayProcess(port, env);
      // And while they come back: some of these reach them in their replay, the others live.
      await send(15);
      await waitFor(everyoneHas(40), 30_000, 50);

      expect(clients.map((client) => [client.name, client.ended])).toEqual(clients.map((client) => [client.name, undefined]));
      for (const client of clients) expect(statuses(client), client.name).toEqual(sent);
      // Nothing more arrives later (a late duplicate).
      await send(1);
      await waitFor(everyoneHas(41), 10_000, 50);
      for (const client of clients) expect(statuses(client), client.name).toEqual(sent);
    },
    90_000,
  );
});
