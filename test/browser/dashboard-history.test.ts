import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDemoData } from '../../src/backends/memory/demo-data.js';
import { buildWebhookRequest } from '../../src/events/webhook-request.js';
import { total } from '../../src/graphql/line-totals.js';
import { chromiumFor, openDashboard } from '../helpers/browser.js';
import { startGateway, TEST_KEY, type RunningGateway } from '../helpers/gateway.js';

/*
 * The dashboard's transaction history in a real browser: webhooks
 * posted to a real gateway show up in the recent list and in the chart of
 * sales per minute without a reload, the status filter narrows the list, a
 * history younger than the hour says so, and nothing leaves for another origin.
 */
const hasChromium = chromiumFor('dashboard history browser test');

const demo = createDemoData();
const sale = (index: number) => demo.transactions[index]!;
const MINUTE = 60_000;

let running: RunningGateway;
let browser: Browser;
let page: Page;
let elsewhere: string[] = [];
let startedBefore = 0;
let startedAfter = 0;

async function postWebhook(index: number, status: string): Promise<void> {
  const { transactionId, products } = sale(index);
  const request = buildWebhookRequest({ form: 'enveloped', transaction: { transactionId, status, products } });
  const response = await fetch(`${running.url}/webhooks`, { method: 'POST', headers: request.headers, body: request.body });
  expect(response.status).toBe(200);
  // The list is ordered by the time of the last update, to the millisecond: keep the posts' order unambiguous.
  await new Promise((resolve) => setTimeout(resolve, 3));
}

const row = (index: number) => page.locator(`#recent-rows tr[data-transaction-id="${sale(index).transactionId}"]`);
const listed = () =>
  page
    .locator('#recent-rows tr[data-transaction-id]')
    .evaluateAll((rows) => rows.map((tr) => [tr.getAttribute('data-transaction-id'), tr.getAttribute('data-status')]));
const bars = () =>
  page.locator('#sales-chart rect.bar').evaluateAll((rects) =>
    rects.map((rect) => ({
      start: rect.getAttribute('data-start')!,
      sold: Number(rect.getAttribute('data-total-sold')),
      height: Number(rect.getAttribute('height')),
      current: rect.classList.contains('current'),
    })),
  );

describe.skipIf(!hasChromium)('dashboard page: the transaction history', () => {
  beforeAll(async () => {
    startedBefore = Date.now();
    running = await startGateway({ SIMULATOR: 'off' });
    startedAfter = Date.now();
    ({ browser, page, elsewhere } = await openDashboard(running.url, TEST_KEY, { height: 900 }));
  }, 30_000);
  afterAll(async () => {
    await browser?.close();
    await running?.close();
  });

  it('starts empty: an hour of 60 empty minutes drawn, and a list that says why it is empty', async () => {
    await expect.poll(async () => (await bars()).length).toBe(60);
    const drawn = await bars();
    expect(drawn.every((bar) => bar.sold === 0)).toBe(true);
    expect(drawn.at(-1)!.current).toBe(true);
    expect(new Date(drawn[1]!.start).getTime() - new Date(drawn[0]!.start).getTime()).toBe(MINUTE);
    const chart = page.locator('#sales-chart svg');
    expect(await chart.getAttribute('role')).toBe('img');
    expect(await chart.getAttribute('aria-label')).toMatch(/Sales per minute (in [A-Z]{3} )?over the last 60 minutes: no transactions yet/);
    expect(await page.locator('#recent-rows').textContent()).toMatch(/No transactions yet/);
  });

  it('says the history covers only since the gateway started, which is within the hour shown', async () => {
    const note = page.locator('#coverage-note');
    await expect
      .poll(() => note.textContent())
      .toMatch(/^History covers only since \d\d:\d\d: earlier sales of this hour are not counted\.$/);
    const since = new Date((await note.locator('time').getAttribute('datetime'))!).getTime();
    expect(since).toBeGreaterThanOrEqual(startedBefore);
    expect(since).toBeLessThanOrEqual(startedAfter);
    expect(await note.isVisible()).toBe(true);
  });

  it('shows a sale in the list and in the bar of the current minute within 3 seconds, without reloading', async () => {
    await page.evaluate(() => ((globalThis as unknown as { notReloaded: boolean }).notReloaded = true));
    const soldAt = Date.now();
    await postWebhook(0, 'completed');
    await row(0).waitFor({ timeout: 3_000 });
    const amount = total(sale(0).products);
    expect(await row(0).getAttribute('data-status')).toBe('completed');
    expect(await row(0).textContent()).toContain(amount.toFixed(2));
    expect(await row(0).textContent()).toContain(sale(0).products[0]!.productName!);

    // The bar of the minute of the sale (the last one, unless a minute has started since).
    const minuteOfSale = new Date(Math.floor(soldAt / MINUTE) * MINUTE).toISOString();
    await expect
      .poll(async () => (await bars()).find((bar) => bar.start === minuteOfSale)?.sold, { timeout: 3_000 })
      .toBeCloseTo(amount, 6);
    const drawn = await bars();
    expect(drawn).toHaveLength(60);
    const bar = drawn.find((candidate) => candidate.start === minuteOfSale)!;
    expect(bar.height).toBeGreaterThan(1);
    if (Math.floor(Date.now() / MINUTE) === Math.floor(soldAt / MINUTE)) expect(bar.current).toBe(true);
    expect(await page.locator('#sales-chart svg').getAttribute('aria-label')).toContain('1 transaction;');
    expect(await page.locator('#top-products').textContent()).toContain(sale(0).products[0]!.productName!);
    expect(await page.evaluate(() => (globalThis as unknown as { notReloaded?: boolean }).notReloaded)).toBe(true);
  });

  it('lists the most recently updated first, and a status change moves a transaction to the top', async () => {
    await postWebhook(1, 'pending');
    await postWebhook(2, 'refunded');
    await postWebhook(3, 'pending');
    await expect.poll(listed, { timeout: 3_000 }).toEqual([
      [sale(3).transactionId, 'pending'],
      [sale(2).transactionId, 'refunded'],
      [sale(1).transactionId, 'pending'],
      [sale(0).transactionId, 'completed'],
    ]);
    await postWebhook(1, 'completed');
    await expect.poll(async () => (await listed())[0], { timeout: 3_000 }).toEqual([sale(1).transactionId, 'completed']);
    expect(await page.locator('#recent-count').textContent()).toBe('(4)');
  });

  it('narrows the list to the status chosen in the filter, live events included, and back to all', async () => {
    const choices = await page
      .locator('#status-filter option')
      .evaluateAll((options) => options.map((option) => (option as HTMLOptionElement).value));
    expect(choices).toEqual(['', 'completed', 'pending', 'refunded']);
    await page.locator('#status-filter').selectOption('pending');
    await expect.poll(listed, { timeout: 3_000 }).toEqual([[sale(3).transactionId, 'pending']]);

    // While filtered, a new pending sale joins the list and a completed one does not.
    await postWebhook(4, 'completed');
    await postWebhook(5, 'pending');
    await expect.poll(listed, { timeout: 3_000 }).toEqual([
      [sale(5).transactionId, 'pending'],
      [sale(3).transactionId, 'pending'],
    ]);
    expect(await page.locator('#recent-count').textContent()).toBe('(2)');

    await page.locator('#status-filter').selectOption('');
    await expect.poll(async () => (await listed()).length, { timeout: 3_000 }).toBe(6);
  });

  it('keeps to 20 rows, however many transactions the history holds', async () => {
    for (let index = 6; index < 30; index += 1) await postWebhook(index, 'completed');
    await expect.poll(() => page.locator('#recent-count').textContent(), { timeout: 3_000 }).toBe('(30)');
    const shown = await listed();
    expect(shown).toHaveLength(20);
    expect(shown[0]).toEqual([sale(29).transactionId, 'completed']);
    await expect.poll(async () => (await bars()).reduce((sum, bar) => sum + bar.sold, 0), { timeout: 3_000 }).toBeGreaterThan(0);
  });

  it('fits a phone-width screen, the chart drawn again at its new width', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    const drawnAt = () => page.evaluate(() => Number(document.querySelector('#sales-chart svg')!.getAttribute('width')));
    await expect.poll(drawnAt).toBeLessThan(390);
    const fits = await page.evaluate(() => {
      const svg = document.querySelector('#sales-chart svg')!;
      return {
        overflow: document.documentElement.scrollWidth - document.documentElement.clientWidth,
        chart: Number(svg.getAttribute('width')),
        box: document.getElementById('sales-chart')!.clientWidth,
      };
    });
    expect(fits.overflow).toBeLessThanOrEqual(0);
    expect(fits.chart).toBe(fits.box);
    expect((await bars()).length).toBe(60);
  });

  it('breaks no rule of its Content-Security-Policy, and nothing leaves for another origin', async () => {
    expect(await page.evaluate(() => (globalThis as unknown as { violations: string[] }).violations)).toEqual([]);
    expect(elsewhere).toEqual([]);
  });

  it('on a gateway without history (HISTORY=off), says so in words and leaves the room to the rest', async () => {
    const off = await startGateway({ SIMULATOR: 'off', HISTORY: 'off' });
    const other = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    try {
      await other.goto(`${off.url}/`);
      await other.locator('#key').fill(TEST_KEY);
      await other.keyboard.press('Enter');
      await other.locator('.machine').first().waitFor();
      await expect.poll(() => other.locator('#history-note').textContent()).toMatch(/History unavailable: .*history is off/);
      expect(await other.locator('#sales-chart').isVisible()).toBe(false);
      expect(await other.locator('#recent-rows').isVisible()).toBe(false);
      expect(await other.locator('#fleet').isVisible()).toBe(true);
      // Changing the key ends the panel: the note goes with it.
      await other.locator('#sign-out').click();
      expect(await other.locator('#history-note').isVisible()).toBe(false);
    } finally {
      await other.close();
      await off.close();
    }
  });
});
