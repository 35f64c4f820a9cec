import { readFileSync } from 'node:fs';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildWebhookRequest } from '../../src/events/webhook-request.js';
import { chromiumFor, keepToOrigin, launchChromium } from '../helpers/browser.js';
import { startGateway, TEST_KEY, type RunningGateway } from '../helpers/gateway.js';
import { freePort, redisServerOnPath, startTestRedis, type TestRedis } from '../helpers/redis-server.js';

/*
 * A browser's own EventSource subscribing (Debian's Chromium, every other
 * origin blocked): the page runs the recipe of docs/subscriptions.md, which
 * mints a subscription token with its key and opens `new EventSource(…)`
 * with it, and receives the events posted here; when its instance restarts,
 * the page starts again with a new token after the last event it saw, and
 * misses none of those posted to another instance meanwhile (Redis).
 */
const hasChromium = chromiumFor('EventSource browser test');
const canRun = hasChromium && redisServerOnPath();

const RECIPE = readFileSync(new URL('../fixtures/event-source-recipe.js', import.meta.url), 'utf8');
const GUIDE = readFileSync(new URL('../../docs/subscriptions.md', import.meta.url), 'utf8');
const LIVE = 'subscription ($after: ID) { transactionUpdated(after: $after) { eventId status } }';
const line = { productId: 'p-1', productName: 'Cola', productPrice: 1.5, quantity: 1 };

let redis: TestRedis;
let port: number;
let a: RunningGateway;
let b: RunningGateway;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let elsewhere: string[];

const startA = () => startGateway({ PORT: String(port), SIMULATOR: 'off', REDIS_URL: redis.url });

async function postTo(running: RunningGateway, status: string): Promise<void> {
  const request = buildWebhookRequest({
    form: 'enveloped',
    id: `evt-${status}`,
    transaction: { transactionId: 'tx-browser', status, products: [line] },
  });
  const response = await fetch(`${running.url}/webhooks`, { method: 'POST', headers: request.headers, body: request.body });
  expect(response.status).toBe(200);
}

const received = () => page.evaluate(() => (globalThis as unknown as { statuses: string[] }).statuses);

it('the guide shows the recipe this test runs, as it is', () => {
  // The fixture's first line says what it is; the rest is the guide's code block.
  expect(GUIDE).toContain(RECIPE.split('\n').slice(1).join('\n').trimEnd());
});

describe.skipIf(!canRun)('a browser subscribes with its own EventSource', () => {
  beforeAll(async () => {
    redis = await startTestRedis();
    port = await freePort();
    a = await startA();
    b = await startGateway({ SIMULATOR: 'off', REDIS_URL: redis.url });
    browser = await launchChromium();
    context = await browser.newContext();
    elsewhere = await keepToOrigin(context, a.url);
    page = await context.newPage();
    await page.goto(`${a.url}/healthz`);
    await page.addScriptTag({ content: RECIPE });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await a?.close();
    await b?.close();
    await redis?.close();
  });

  it('mints a token with its key, opens an EventSource with it, and receives an event', async () => {
    await page.evaluate(
      ({ gateway, apiKey, query }) => {
        const statuses: string[] = [];
        const errors: string[] = [];
        Object.assign(globalThis, { statuses, errors });
        (globalThis as unknown as { subscribeWithEventSource: (options: unknown) => () => void }).subscribeWithEventSource({
          gateway,
          apiKey,
          query,
          onResult: (result: { data?: { transactionUpdated: { status: string } }; errors?: Array<{ message: string }> }) => {
            if (result.data) statuses.push(result.data.transactionUpdated.status);
            for (const error of result.errors ?? []) errors.push(error.message);
          },
        });
      },
      { gateway: a.url, apiKey: TEST_KEY, query: LIVE },
    );
    await expect.poll(() => a.gateway.activeSubscriptions(), { timeout: 10_000 }).toBe(1);
    await postTo(a, 'one');
    await expect.poll(received, { timeout: 10_000 }).toEqual(['one']);
    // The key never went into a URL; nothing left the gateway's origin.
    expect(elsewhere).toEqual([]);
  }, 30_000);

  it('starts again with a new token after its instance restarts, and misses nothing posted meanwhile', async () => {
    await a.close();
    // Posted to the other instance while the page's is away: the shared log keeps them.
    await postTo(b, 'two');
    await postTo(b, 'three');
    a = await startA();
    await expect.poll(received, { timeout: 20_000 }).toEqual(['one', 'two', 'three']);
    await expect.poll(() => a.gateway.activeSubscriptions(), { timeout: 10_000 }).toBe(1);
    await postTo(a, 'four');
    await expect.poll(received, { timeout: 10_000 }).toEqual(['one', 'two', 'three', 'four']);
    expect(await page.evaluate(() => (globalThis as unknown as { errors: string[] }).errors)).toEqual([]);
    expect(elsewhere).toEqual([]);
  }, 60_000);
});
