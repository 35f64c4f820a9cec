import { chromium } from 'playwright-core';
import { loadConfig } from '../src/config/config.js';
import { createGateway } from '../src/app/gateway.js';

/*
 * npm run screenshot: docs/dashboard.png for the README, taken from a gateway
 * on a free port started as `npm start` starts it (the demo with its
 * simulator, and an hour of dated demo sales in its history: GatewayDeps.demoHour),
 * in Debian's Chromium.
 */

const config = loadConfig({ PORT: '0', LOG_LEVEL: 'silent', SIMULATOR: 'auto' });
// Changes every 300 ms, so the page shows several before the picture is taken.
const gateway = createGateway({ ...config, simulator: { ...config.simulator, intervalMs: 300 }, vendingPollMs: 1_000 }, { demoHour: true });
const { url } = await gateway.listen();
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking'],
});
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 1800 } });
  await page.goto(`${url}/`);
  await page.locator('#key').fill('dev-key-vending-gateway');
  await page.keyboard.press('Enter');
  await page.locator('.machine').first().waitFor();
  await page.waitForFunction(() => document.querySelectorAll('.event').length >= 6, undefined, { timeout: 15_000 });
  await page.waitForFunction(
    () =>
      document.querySelectorAll('#sales-chart rect.bar').length === 60 &&
      document.querySelectorAll('#recent-rows tr[data-transaction-id]').length === 20,
    undefined,
    { timeout: 15_000 },
  );
  // The lists refetch shortly after the last events shown; let them settle.
  await page.waitForTimeout(500);
  // A machine's products, so the picture shows their thumbnails too.
  await page.locator('.machine').first().click();
  await page.locator('#detail .product img').first().waitFor();
  await page.waitForFunction(
    () =>
      [...document.querySelectorAll<HTMLImageElement>('#detail .product img')].every((image) => image.complete && image.naturalWidth > 0),
    undefined,
    { timeout: 5_000 },
  );
  // The picture ends under the machines: the history, stuck payments and the fleet are what it shows.
  const bottom = await page.evaluate(() =>
    Math.ceil(
      Math.max(
        ...['section.recent', 'section.stuck', '.fleet-section', '.detail-section'].map(
          (selector) => document.querySelector(selector)!.getBoundingClientRect().bottom,
        ),
      ),
    ),
  );
  await page.setViewportSize({ width: 1280, height: bottom + 16 });
  await page.screenshot({ path: 'docs/dashboard.png' });
  process.stdout.write('wrote docs/dashboard.png\n');
} finally {
  await browser.close();
  await gateway.close();
}
