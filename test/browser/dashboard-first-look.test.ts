import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumFor, openDashboard } from '../helpers/browser.js';
import { startGateway, TEST_KEY, type RunningGateway } from '../helpers/gateway.js';

/*
 * A first look, as `npm start` gives it (the demo with its simulator and an
 * hour of dated demo sales: GatewayDeps.demoHour), in Chromium with every
 * other origin blocked: a filled hour, products with thumbnails the gateway
 * serves, a favicon, and GraphiQL opening on a query that runs as it stands.
 */
const hasChromium = chromiumFor('dashboard first-look browser test');

let running: RunningGateway;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let elsewhere: string[] = [];

describe.skipIf(!hasChromium)('a first look at a fresh start', () => {
  beforeAll(async () => {
    running = await startGateway({ SIMULATOR: 'auto' }, { demoHour: true });
    ({ browser, context, page, elsewhere } = await openDashboard(running.url, TEST_KEY, { height: 1600 }));
  }, 30_000);
  afterAll(async () => {
    await browser?.close();
    await running?.close();
  });

  it('shows a filled hour: sales spread over its minutes, per currency, top products and stuck payments', async () => {
    const sold = () =>
      page
        .locator('#sales-chart rect.bar')
        .evaluateAll((rects) => rects.filter((rect) => Number(rect.getAttribute('data-total-sold')) > 0).length);
    await expect.poll(sold, { timeout: 10_000 }).toBeGreaterThan(20);
    expect(await page.locator('#sales-summary [data-currency]').count()).toBeGreaterThan(1);
    expect(await page.locator('#sales-summary').textContent()).not.toContain('Nothing');
    expect(await page.locator('#top-products li[data-product-id]').count()).toBe(5);
    expect(await page.locator('#recent-rows tr[data-transaction-id]').count()).toBe(20);
    // The whole hour is there: no note that the history covers only part of it.
    expect(await page.locator('#coverage-note').textContent()).toBe('');
    await expect.poll(() => page.locator('#stuck-rows tr[data-transaction-id]').count(), { timeout: 5_000 }).toBeGreaterThan(0);
  });

  it('shows the products of a machine with thumbnails the gateway serves', async () => {
    await page.locator('.machine').first().click();
    const images = page.locator('#detail .product img');
    await images.first().waitFor({ timeout: 5_000 });
    await expect
      .poll(
        () =>
          images.evaluateAll((all) =>
            all.map((image) => (image as HTMLImageElement).complete && (image as HTMLImageElement).naturalWidth > 0),
          ),
        { timeout: 5_000 },
      )
      .toEqual(Array.from({ length: 6 }, () => true));
    const sources = await images.evaluateAll((all) => all.map((image) => (image as HTMLImageElement).src));
    for (const source of sources) expect(new URL(source).origin).toBe(new URL(running.url).origin);
  });

  it('has a favicon, as the page names it and where browsers ask for one', async () => {
    const icon = await page.locator('link[rel="icon"]').getAttribute('href');
    for (const path of [icon!, '/favicon.ico']) {
      const response = await fetch(`${running.url}${path}`);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('image/svg+xml');
      expect(await response.text()).toMatch(/^<svg /);
    }
    expect(await page.evaluate(async (href) => (await fetch(href)).status, icon!)).toBe(200);
  });

  it('opens GraphiQL on an example query that runs as it stands', async () => {
    const graphiql = await context.newPage();
    await graphiql.goto(`${running.url}/graphql`);
    await graphiql.locator('.graphiql-query-editor .monaco-editor').first().waitFor({ timeout: 20_000 });
    // The gateway's keys are the test's: the development key is not in use here.
    await graphiql.getByRole('button', { name: 'Headers' }).click();
    await graphiql.locator('.graphiql-editor-tool .monaco-editor').last().click();
    await graphiql.keyboard.press('ControlOrMeta+A');
    await graphiql.keyboard.insertText(JSON.stringify({ Authorization: TEST_KEY }));
    await graphiql.locator('.graphiql-execute-button').click();
    const response = graphiql.locator('.graphiql-response');
    await expect.poll(() => response.textContent(), { timeout: 10_000 }).toContain('totalCount');
    const text = (await response.textContent())!.replace(/\s/g, '');
    expect(text).not.toContain('SyntaxError');
    expect(text).not.toContain('"errors"');
    expect(text).toContain('"byCurrency"');
    await graphiql.close();
  }, 40_000);

  it('breaks no rule of its Content-Security-Policy, and nothing leaves for another origin', async () => {
    expect(await page.evaluate(() => (globalThis as unknown as { violations: string[] }).violations)).toEqual([]);
    expect(elsewhere).toEqual([]);
  });
});
