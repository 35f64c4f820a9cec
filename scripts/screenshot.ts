import { chromium } from 'playwright-core';
import { loadConfig } from '../src/config/index.js';
import { createGateway } from '../src/app/gateway.js';

/*
 * npm run screenshot: docs/dashboard.png for the README, taken from a gateway
 * on a free port with the demo simulator running, in Debian's Chromium.
 */
const gateway = createGateway(loadConfig({ PORT: '0', LOG_LEVEL: 'silent', SIMULATOR: 'auto', SIMULATOR_INTERVAL_MS: '300' }));
const { url } = await gateway.listen();
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 760 } });
  await page.goto(`${url}/`);
  await page.locator('#key').fill('dev-key-vending-gateway');
  await page.keyboard.press('Enter');
  await page.locator('.machine').nth(2).click();
  await page.waitForFunction(() => document.querySelectorAll('.event').length >= 6, undefined, { timeout: 15_000 });
  await page.screenshot({ path: 'docs/dashboard.png' });
  process.stdout.write('wrote docs/dashboard.png\n');
} finally {
  await browser.close();
  await gateway.close();
}
