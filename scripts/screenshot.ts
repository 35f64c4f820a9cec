import { randomUUID } from 'node:crypto';
import { chromium } from 'playwright-core';
import { createDemoData } from '../src/backends/memory/demo-data.js';
import { loadConfig } from '../src/config/index.js';
import { createGateway } from '../src/app/gateway.js';
import { buildWebhookRequest } from '../src/events/webhook-request.js';

/*
 * npm run screenshot: docs/dashboard.png for the README, taken from a gateway
 * on a free port with the demo simulator running, in Debian's Chromium.
 * The history starts empty and the simulator only adds to the current minute,
 * so an hour of sales is posted first as webhooks dated over the last hour.
 */

/** 120 sales of the demo's baskets, the first 40 the demo transactions themselves, spread over the hour before now. */
async function seedLastHour(url: string): Promise<void> {
  const demo = createDemoData();
  const now = Date.now();
  for (let sale = 0; sale < 120; sale += 1) {
    const basket = demo.transactions[sale % demo.transactions.length]!;
    const transactionId = sale < demo.transactions.length ? basket.transactionId : randomUUID();
    // A made-up busy spell in the middle of the hour, so the chart has a shape.
    const minutesAgo = sale % 3 === 0 ? 20 + ((sale * 7) % 15) : 1 + ((sale * 37) % 58);
    const at = new Date(now - minutesAgo * 60_000 - ((sale * 13) % 50) * 1_000);
    const request = buildWebhookRequest({ form: 'enveloped', at, transaction: { ...basket, transactionId, status: sale % 9 === 4 ? 'refunded' : 'completed' } });
    const response = await fetch(`${url}/webhooks`, { method: 'POST', headers: request.headers, body: request.body });
    if (response.status !== 200) throw new Error(`seeding the history: POST /webhooks answered ${response.status}`);
  }
}

const config = loadConfig({ PORT: '0', LOG_LEVEL: 'silent', SIMULATOR: 'auto' });
// Changes every 300 ms, so the page shows several before the picture is taken.
const gateway = createGateway({ ...config, simulator: { ...config.simulator, intervalMs: 300 } });
const { url } = await gateway.listen();
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
try {
  await seedLastHour(url);
  const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
  await page.goto(`${url}/`);
  await page.locator('#key').fill('dev-key-vending-gateway');
  await page.keyboard.press('Enter');
  await page.locator('.machine').first().waitFor();
  await page.waitForFunction(() => document.querySelectorAll('.event').length >= 6, undefined, { timeout: 15_000 });
  await page.waitForFunction(() => document.querySelectorAll('#sales-chart rect.bar').length === 60 && document.querySelectorAll('#recent-rows tr[data-transaction-id]').length === 20, undefined, { timeout: 15_000 });
  // The lists refetch shortly after the last events shown; let them settle.
  await page.waitForTimeout(500);
  // The picture ends under the recent transactions: the history is what it shows.
  const bottom = await page.evaluate(() => Math.ceil(document.querySelector('section.recent')!.getBoundingClientRect().bottom));
  await page.setViewportSize({ width: 1280, height: bottom + 16 });
  await page.screenshot({ path: 'docs/dashboard.png' });
  process.stdout.write('wrote docs/dashboard.png\n');
} finally {
  await browser.close();
  await gateway.close();
}
