import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MemoryBackend } from '../../src/backends/memory/memory-backend.js';
import { createDemoData } from '../../src/backends/memory/demo-data.js';
import { chromiumFor, openDashboard } from '../helpers/browser.js';
import { demoBackend, pollVendingsEvery, startGateway, TEST_KEY, type RunningGateway } from '../helpers/gateway.js';

/*
 * The Machines panel live, in Chromium with every other origin blocked: a
 * machine taken offline at the service (no webhook says so) turns offline on
 * the page without a reload, saying since when, and back; a machine offline
 * when the page opened says since when too.
 */
const hasChromium = chromiumFor('dashboard machines browser test');

const demo = createDemoData();
const byName = (identifier: string) => demo.vendings.find((vending) => vending.identifier === identifier)!;
const BERLIN = byName('VM-DE-0101');
const STOCKHOLM = byName('VM-SE-0108');

let backend: MemoryBackend;
let running: RunningGateway;
let browser: Browser;
let page: Page;
let elsewhere: string[] = [];

const card = (id: string) => page.locator(`.machine[data-vending-id="${id}"]`);

describe.skipIf(!hasChromium)('dashboard page: machines live', () => {
  beforeAll(async () => {
    backend = demoBackend();
    running = await startGateway({ SIMULATOR: 'off', VENDING_POLL_MS: '1000' }, { backend }, pollVendingsEvery(100));
    ({ browser, page, elsewhere } = await openDashboard(running.url, TEST_KEY));
  }, 30_000);
  afterAll(async () => {
    await browser?.close();
    await running?.close();
  });

  it('says a machine offline at the start is offline at least since the gateway first read it, not since then', async () => {
    expect(STOCKHOLM.online).toBe(false);
    await expect
      .poll(() => card(STOCKHOLM.vendingId).locator('.offline').textContent(), { timeout: 5_000 })
      .toMatch(/^Offline at least since \d\d:\d\d$/);
    expect(await card(STOCKHOLM.vendingId).locator('.offline').getAttribute('title')).toMatch(/already offline when the gateway started/);
    expect(await card(STOCKHOLM.vendingId).getAttribute('data-online')).toBe('false');
  });

  it('turns a machine taken offline at the service offline on the page, without a reload, and back online', async () => {
    await page.evaluate(() => ((globalThis as unknown as { notReloaded: boolean }).notReloaded = true));
    expect(await card(BERLIN.vendingId).getAttribute('data-online')).toBe('true');
    expect(await card(BERLIN.vendingId).locator('.offline').count()).toBe(0);
    const before = new Date();
    backend.setVendingState(BERLIN.vendingId, { online: false });
    await expect.poll(() => card(BERLIN.vendingId).getAttribute('data-online'), { timeout: 5_000 }).toBe('false');
    const since = await card(BERLIN.vendingId).locator('.offline time').getAttribute('datetime');
    expect(new Date(since!).getTime()).toBeGreaterThanOrEqual(before.getTime() - 1_000);
    expect(await card(BERLIN.vendingId).locator('[data-flag="online"]').textContent()).toBe('online: no');

    backend.setVendingState(BERLIN.vendingId, { online: true, enabled: false, status: 'maintenance' });
    await expect.poll(() => card(BERLIN.vendingId).getAttribute('data-online'), { timeout: 5_000 }).toBe('true');
    expect(await card(BERLIN.vendingId).locator('.offline').count()).toBe(0);
    expect(await card(BERLIN.vendingId).locator('[data-flag="enabled"]').textContent()).toBe('enabled: no');
    expect(await card(BERLIN.vendingId).getAttribute('data-status')).toBe('maintenance');
    expect(await page.evaluate(() => (globalThis as unknown as { notReloaded?: boolean }).notReloaded)).toBe(true);
  });

  it('breaks no rule of its Content-Security-Policy, and nothing leaves for another origin', async () => {
    expect(await page.evaluate(() => (globalThis as unknown as { violations: string[] }).violations)).toEqual([]);
    expect(elsewhere).toEqual([]);
  });
});
