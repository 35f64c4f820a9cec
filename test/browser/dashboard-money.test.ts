import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDemoData } from '../../src/backends/memory/demo-data.js';
import type { Transaction } from '../../src/contract/contract.js';
import { buildWebhookRequest } from '../../src/events/webhook-request.js';
import { total } from '../../src/graphql/line-totals.js';
import { chromiumFor, openDashboard } from '../helpers/browser.js';
import { startGateway, TEST_KEY, type RunningGateway } from '../helpers/gateway.js';

/*
 * The dashboard as an operator of a fleet in several countries reads it, in
 * Chromium with every other origin blocked: webhooks in SEK (the currency of
 * the machine the transaction names), GBP (named by the transaction itself)
 * and EUR (neither: DEFAULT_CURRENCY) are never added together, and every
 * amount shown names its currency; a payment left pending past the threshold
 * the operator sets on the page is listed as stuck, live.
 */
const hasChromium = chromiumFor('dashboard money browser test');

const demo = createDemoData();
const machineOf = (identifier: string) => demo.vendings.find((vending) => vending.identifier === identifier)!;
const SE = machineOf('VM-SE-0108');
/** A demo sale at the Stockholm machine (prices in SEK), and ones at a Berlin and a London machine. */
const sale = (currency: string): Transaction =>
  demo.transactions.find((t) => t.vendingId === demo.vendings.find((v) => v.currencyCode === currency)!.vendingId)!;
const format = (amount: number, currency: string) => new Intl.NumberFormat('en-US', { style: 'currency', currency }).format(amount);

let running: RunningGateway;
let browser: Browser;
let page: Page;
let elsewhere: string[] = [];

async function post(
  transaction: Record<string, unknown> & Pick<Transaction, 'transactionId' | 'status' | 'products'>,
  at?: Date,
): Promise<void> {
  const request = buildWebhookRequest({ form: 'enveloped', transaction, ...(at ? { at } : {}) });
  const response = await fetch(`${running.url}/webhooks`, { method: 'POST', headers: request.headers, body: request.body });
  expect(response.status).toBe(200);
}

const sek = sale('SEK');
const gbp = sale('GBP');
const eur = sale('EUR');

describe.skipIf(!hasChromium)('dashboard page: money by currency, stuck payments', () => {
  beforeAll(async () => {
    running = await startGateway({ SIMULATOR: 'off' });
    ({ browser, page, elsewhere } = await openDashboard(running.url, TEST_KEY));
    // SEK through the machine the transaction names (no currency of its own), GBP named by the transaction, EUR by neither.
    expect(sek.vendingId).toBe(SE.vendingId);
    await post({ transactionId: sek.transactionId, status: 'completed', products: sek.products, vendingId: sek.vendingId });
    await post({ transactionId: gbp.transactionId, status: 'completed', products: gbp.products, currencyCode: 'GBP' });
    await post({ transactionId: eur.transactionId, status: 'completed', products: eur.products });
  }, 30_000);
  afterAll(async () => {
    await browser?.close();
    await running?.close();
  });

  it('totals the hour per currency, each figure naming its currency, never one sum across them', async () => {
    const figures = () =>
      page
        .locator('#sales-summary [data-currency]')
        .evaluateAll((nodes) => nodes.map((node) => [node.getAttribute('data-currency'), node.textContent]));
    await expect.poll(figures, { timeout: 5_000 }).toEqual([
      ['EUR', `${format(total(eur.products), 'EUR')} sold`],
      ['GBP', `${format(total(gbp.products), 'GBP')} sold`],
      ['SEK', `${format(total(sek.products), 'SEK')} sold`],
    ]);
    const mixed = format(total(eur.products) + total(gbp.products) + total(sek.products), 'EUR').slice(1);
    expect(await page.locator('#sales-summary').textContent()).not.toContain(mixed);
  });

  it('gives every top product its amount in the currency it sold in', async () => {
    const items = () =>
      page
        .locator('#top-products li[data-product-id]')
        .evaluateAll((nodes) => nodes.map((node) => [node.getAttribute('data-currency'), node.querySelector('.num')?.textContent]));
    await expect.poll(async () => (await items()).length, { timeout: 5_000 }).toBeGreaterThan(0);
    for (const [currency, text] of await items()) {
      expect(['EUR', 'GBP', 'SEK']).toContain(currency);
      const amount = Intl.NumberFormat('en-US', { style: 'currency', currency: currency! })
        .formatToParts(1)
        .find((part) => part.type === 'currency')!.value;
      expect(text).toContain(amount);
    }
    const line = sek.products[0]!;
    const sekItem = page.locator(`#top-products li[data-currency="SEK"][data-product-id="${line.productId}"]`);
    expect(await sekItem.locator('.num').textContent()).toContain(format(line.productPrice! * (line.quantity ?? 1), 'SEK'));
  });

  it('names the currency of every amount in the recent list and the live feed', async () => {
    const row = page.locator(`#recent-rows tr[data-transaction-id="${sek.transactionId}"]`);
    await expect.poll(() => row.locator('td.num').textContent(), { timeout: 5_000 }).toBe(format(total(sek.products), 'SEK'));
    expect(await page.locator(`#recent-rows tr[data-transaction-id="${gbp.transactionId}"] td.num`).textContent()).toBe(
      format(total(gbp.products), 'GBP'),
    );
    const event = page.locator(`#feed .event[data-transaction-id="${sek.transactionId}"]`);
    await expect.poll(() => event.locator('.head span').nth(1).textContent(), { timeout: 5_000 }).toBe(format(total(sek.products), 'SEK'));
  });

  it('draws the chart of one currency at a time, the operator choosing which', async () => {
    const bars = () =>
      page.locator('#sales-chart rect.bar').evaluateAll((rects) => rects.map((rect) => Number(rect.getAttribute('data-total-sold'))));
    const choices = await page
      .locator('#chart-currency option')
      .evaluateAll((options) => options.map((option) => (option as HTMLOptionElement).value));
    expect(choices).toEqual(['EUR', 'GBP', 'SEK']);
    await page.locator('#chart-currency').selectOption('SEK');
    await expect
      .poll(async () => (await bars()).reduce((sum, sold) => sum + sold, 0), { timeout: 3_000 })
      .toBeCloseTo(total(sek.products), 6);
    expect(await page.locator('#sales-chart svg').getAttribute('aria-label')).toContain('SEK');
    // The axis's figures are amounts: it names their currency.
    expect(await page.locator('#sales-chart svg text.unit').textContent()).toBe('SEK');
  });

  it('lists a payment pending longer than the threshold set on the page, and drops it once it completes, live', async () => {
    const stuck = demo.transactions[11]!;
    // Pending since 12 minutes ago (the event's own time), and one pending since just now.
    await post({ transactionId: stuck.transactionId, status: 'pending', products: stuck.products }, new Date(Date.now() - 12 * 60_000));
    await post({ transactionId: demo.transactions[12]!.transactionId, status: 'pending', products: demo.transactions[12]!.products });
    const listed = () =>
      page.locator('#stuck-rows tr[data-transaction-id]').evaluateAll((rows) => rows.map((tr) => tr.getAttribute('data-transaction-id')));
    // The default threshold is 10 minutes.
    await expect.poll(listed, { timeout: 5_000 }).toEqual([stuck.transactionId]);
    expect(await page.locator('#stuck-rows').textContent()).toMatch(/pending for 12 min/);
    // A threshold of 15 minutes: nothing is stuck that long.
    await page.locator('#stuck-threshold').fill('15');
    await page.locator('#stuck-threshold').dispatchEvent('change');
    await expect.poll(listed, { timeout: 3_000 }).toEqual([]);
    await page.locator('#stuck-threshold').fill('5');
    await page.locator('#stuck-threshold').dispatchEvent('change');
    await expect.poll(listed, { timeout: 3_000 }).toEqual([stuck.transactionId]);
    // It completes: it leaves the list without a reload.
    await post({ transactionId: stuck.transactionId, status: 'completed', products: stuck.products });
    await expect.poll(listed, { timeout: 3_000 }).toEqual([]);
  });

  it('refuses a threshold that is not a whole number of minutes from 1 to 1440, saying so and showing the one in use', async () => {
    const box = page.locator('#stuck-threshold');
    const note = page.locator('#stuck-note');
    // Typed as an operator types (a number box holds '' for letters typed into it), then left.
    const set = async (value: string) => {
      await box.fill('');
      await box.focus();
      await page.keyboard.type(value);
      await box.blur();
    };
    await set('7');
    await expect.poll(() => note.textContent(), { timeout: 3_000 }).toBe('');
    expect(await box.inputValue()).toBe('7');
    for (const typed of ['0.5', '0.1', '2000', '0', '-5', '', 'abc']) {
      await set(typed);
      // The box shows the value in use again, and the page says what was refused and why.
      await expect.poll(() => box.inputValue(), { timeout: 3_000 }).toBe('7');
      const said = await note.textContent();
      expect(said, typed).toMatch(/whole number of minutes from 1 to 1440/);
      expect(said, typed).toMatch(/pending longer than 7 min/);
      expect(await page.locator('#stuck-rows').textContent()).not.toMatch(/longer than 10 min/);
    }
    // A value that is kept clears the note.
    await set('12');
    await expect.poll(() => note.textContent(), { timeout: 3_000 }).toBe('');
    expect(await box.inputValue()).toBe('12');
  });

  it('breaks no rule of its Content-Security-Policy, and nothing leaves for another origin', async () => {
    expect(await page.evaluate(() => (globalThis as unknown as { violations: string[] }).violations)).toEqual([]);
    expect(elsewhere).toEqual([]);
  });
});
