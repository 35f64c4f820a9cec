import { createServer } from 'node:net';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDemoData } from '../../src/backends/memory/demo-data.js';
import { buildWebhookRequest } from '../../src/events/webhook-request.js';
import { chromiumFor, launchChromium, notePolicyViolations } from '../helpers/browser.js';
import { startGateway, TEST_KEY, type RunningGateway } from '../helpers/gateway.js';

/*
 * The dashboard at `/` in a real browser (Debian's Chromium driven by
 * playwright-core): key, fleet, detail, a webhook arriving in the live feed,
 * and the feed reconnecting by itself after the gateway restarts.
 */
const hasChromium = chromiumFor('dashboard browser test');

const demo = createDemoData();
let port: number;
let running: RunningGateway;
let browser: Browser;
let page: Page;

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port: free } = server.address() as { port: number };
      server.close(() => resolve(free));
    });
  });
}

const start = () => startGateway({ PORT: String(port), SIMULATOR: 'off' });

async function postWebhook(id: string, transactionId: string, status: string): Promise<void> {
  const request = buildWebhookRequest({
    form: 'enveloped',
    id,
    transaction: { transactionId, status, products: demo.transactions[0]!.products },
  });
  const response = await fetch(`${running.url}/webhooks`, { method: 'POST', headers: request.headers, body: request.body });
  expect(response.status).toBe(200);
}

describe.skipIf(!hasChromium)('dashboard page', () => {
  beforeAll(async () => {
    port = await freePort();
    running = await start();
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    // The page runs under its Content-Security-Policy: anything it refuses is noted here.
    await notePolicyViolations(page);
  }, 30_000);
  afterAll(async () => {
    await browser?.close();
    await running?.close();
  });

  it('asks for the key, refuses a wrong one in words, then shows the fleet', async () => {
    await page.goto(`${running.url}/`);
    await page.locator('#key').fill('wrong-key');
    await page.keyboard.press('Enter');
    await expect.poll(() => page.locator('#error').textContent()).toMatch(/does not know this API key/);
    await page.locator('#key').fill(TEST_KEY);
    await page.keyboard.press('Enter');
    await page.locator('.machine').first().waitFor();
    expect(await page.locator('#key-form').isVisible()).toBe(false);
    expect(await page.locator('#error').isVisible()).toBe(false);
    expect(await page.locator('.machine').count()).toBe(demo.vendings.length);
    expect(await page.locator('.machine').first().textContent()).toContain(demo.vendings[0]!.identifier);
    await expect.poll(() => page.locator('#connection').textContent(), { timeout: 5_000 }).toBe('live');
  });

  it("shows a machine's products, chosen with the keyboard", async () => {
    const machine = demo.vendings[1]!;
    await page.locator(`[data-vending-id="${machine.vendingId}"]`).focus();
    await page.keyboard.press('Enter');
    await expect.poll(() => page.locator('#detail .product').count()).toBe(machine.slots.length);
    expect(await page.locator('#detail-title').textContent()).toBe(machine.identifier);
    expect(await page.locator('#detail .product').first().textContent()).toContain(machine.slots[0]!.product.productName!);
  });

  it('shows a webhook in the live feed within 2 seconds', async () => {
    const target = demo.transactions[2]!;
    await postWebhook('browser-1', target.transactionId, 'completed');
    await page.locator('[data-event-id="browser-1"]').waitFor({ timeout: 2_000 });
    expect(await page.locator('.event').first().getAttribute('data-event-id')).toBe('browser-1');
    expect(await page.locator('.event').first().textContent()).toContain('completed');
  });

  it('reconnects by itself after the gateway restarts, and goes on showing events', async () => {
    await running.close();
    await expect.poll(() => page.locator('#connection').textContent(), { timeout: 5_000 }).toBe('reconnecting');
    running = await start();
    await expect.poll(() => page.locator('#connection').textContent(), { timeout: 10_000 }).toBe('live');
    // The page first asks to resume after browser-1, which the restarted gateway no longer holds, then goes on live
    // (beside its subscription to the machines' changes).
    await expect.poll(() => running.gateway.activeSubscriptions(), { timeout: 5_000 }).toBe(2);
    await expect.poll(() => page.locator('#feed-note').textContent()).toMatch(/could not replay/);
    await postWebhook('browser-2', demo.transactions[3]!.transactionId, 'refunded');
    await page.locator('[data-event-id="browser-2"]').waitFor({ timeout: 2_000 });
    expect(await page.locator('.event').first().getAttribute('data-event-id')).toBe('browser-2');
    // The history panel goes on too, and its note of the outage is gone.
    await page.locator(`#recent-rows tr[data-transaction-id="${demo.transactions[3]!.transactionId}"]`).waitFor({ timeout: 2_000 });
    expect(await page.locator('#history-note').isVisible()).toBe(false);
  }, 20_000);

  it('fits a phone-width screen without sideways scrolling', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    expect(overflow).toBeLessThanOrEqual(0);
  });

  it('runs under a Content-Security-Policy that allows no code but its own, and breaks none of it', async () => {
    const response = await page.request.get(`${running.url}/`);
    expect(response.headers()['content-security-policy']).toContain("default-src 'none'");
    expect(await page.evaluate(() => (globalThis as unknown as { violations: string[] }).violations)).toEqual([]);
  });
});
