import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildWebhookRequest } from '../../src/events/webhook-request.js';
import { chromiumFor, openDashboard } from '../helpers/browser.js';
import { postGraphQL } from '../helpers/graphql-client.js';
import { startGateway, TEST_KEY, type RunningGateway } from '../helpers/gateway.js';
import { startStandInUpstream, type StandInUpstream } from '../helpers/stand-in-upstream.js';

/*
 * The dashboard in front of a REST service (the stand-in), in Chromium with
 * every other origin blocked: what the page does with what the service sends
 * that the demo never does: an event for a transaction the service answers 404
 * for (the gateway sends the event with `transaction: null` and a NOT_FOUND
 * error: the page shows the event from its own fields); machines whose
 * `currencyCode` is missing, a number or in lower case (the machine panel
 * names the currency their sales are counted in).
 */
const hasChromium = chromiumFor('dashboard REST service browser test');

const UPSTREAM_KEY = 'gateway-own-key';
/** A transaction the service does not know: every read of it is 404. */
const UNKNOWN = '0badc0de-0000-4000-8000-00000000f404';
const LINES = [{ productId: 'p-cola', productName: 'Cola', productPrice: 2.5, quantity: 2 }];

let upstream: StandInUpstream;
let running: RunningGateway;
let browser: Browser;
let page: Page;
let elsewhere: string[] = [];

async function post(transaction: Record<string, unknown>, at?: Date): Promise<void> {
  const request = buildWebhookRequest({ form: 'enveloped', transaction: transaction as never, ...(at ? { at } : {}) });
  const response = await fetch(`${running.url}/webhooks`, { method: 'POST', headers: request.headers, body: request.body });
  expect(response.status).toBe(200);
}

describe.skipIf(!hasChromium)('dashboard page in front of a REST service', () => {
  beforeAll(async () => {
    upstream = await startStandInUpstream({ keys: [UPSTREAM_KEY] });
    // What a service may send in place of a three-letter code.
    delete upstream.vendings[0]!.currencyCode;
    upstream.vendings[1]!.currencyCode = 978;
    upstream.vendings[2]!.currencyCode = 'gbp';
    running = await startGateway({ BACKEND: 'rest', UPSTREAM_URL: upstream.url, UPSTREAM_API_KEY: UPSTREAM_KEY, API_KEYS: TEST_KEY });
    ({ browser, page, elsewhere } = await openDashboard(running.url, TEST_KEY));
  }, 30_000);
  afterAll(async () => {
    await browser?.close();
    await running?.close();
    await upstream?.close();
  });

  it('shows an event for a transaction the service answers 404 for, and updates the lists from it at once', async () => {
    // Pending since 12 minutes ago: stuck at the default threshold of 10 minutes.
    await post({ transactionId: UNKNOWN, status: 'pending', products: LINES }, new Date(Date.now() - 12 * 60_000));
    const stuck = () =>
      page.locator('#stuck-rows tr[data-transaction-id]').evaluateAll((rows) => rows.map((tr) => tr.getAttribute('data-transaction-id')));
    await expect.poll(stuck, { timeout: 5_000 }).toEqual([UNKNOWN]);
    const event = page.locator(`#feed .event[data-transaction-id="${UNKNOWN}"]`);
    await expect.poll(() => event.count(), { timeout: 5_000 }).toBe(1);

    await post({ transactionId: UNKNOWN, status: 'completed', products: LINES });
    // Well before the stuck list's own 15 s poll: the event itself makes the page catch up.
    await expect
      .poll(() => page.locator(`#feed .event[data-transaction-id="${UNKNOWN}"] .status`).first().textContent(), { timeout: 3_000 })
      .toBe('completed');
    expect(await page.locator(`#feed .event[data-transaction-id="${UNKNOWN}"] .head span`).nth(1).first().textContent()).toBe('€5.00');
    await expect.poll(stuck, { timeout: 3_000 }).toEqual([]);
    await expect
      .poll(() => page.locator(`#recent-rows tr[data-transaction-id="${UNKNOWN}"]`).getAttribute('data-status'), { timeout: 3_000 })
      .toBe('completed');
    expect(await page.locator('#feed-note').textContent()).toBe('');
  });

  it('names, for each machine, the currency its sales are counted in, however the service writes it', async () => {
    const cases = [
      { machine: upstream.vendings[0]!, currency: 'EUR', id: '0badc0de-0000-4000-8000-0000000000e1' },
      { machine: upstream.vendings[1]!, currency: 'EUR', id: '0badc0de-0000-4000-8000-0000000000e2' },
      { machine: upstream.vendings[2]!, currency: 'GBP', id: '0badc0de-0000-4000-8000-0000000000e3' },
    ];
    for (const { machine, currency, id } of cases) {
      await page.locator(`.machine[data-vending-id="${machine.vendingId as string}"]`).click();
      const first = (machine.products as Array<{ productPrice: number }>)[0]!;
      const price = new Intl.NumberFormat('en-US', { style: 'currency', currency }).format(first.productPrice);
      await expect
        .poll(() => page.locator('#detail .product span').nth(1).textContent(), { timeout: 3_000 })
        .toMatch(new RegExp(`^${price.replace(/[.$]/g, '\\$&')} ×`));
      expect(await page.locator('#detail [data-currency]').getAttribute('data-currency')).toBe(currency);
      // A sale at that machine is counted in the same currency.
      await post({ transactionId: id, status: 'completed', products: LINES, vendingId: machine.vendingId });
      await expect
        .poll(() => page.locator(`#recent-rows tr[data-transaction-id="${id}"] td.num`).textContent(), { timeout: 3_000 })
        .toBe(new Intl.NumberFormat('en-US', { style: 'currency', currency }).format(5));
    }
    // The service's own value is carried through as it sent it.
    const { body } = await postGraphQL<{ vending: { currencyCode: string | null } }>(
      running.url,
      'query($id: ID!) { vending(id: $id) { currencyCode } }',
      {
        variables: { id: upstream.vendings[2]!.vendingId },
        key: TEST_KEY,
      },
    );
    expect(body.data?.vending.currencyCode).toBe('gbp');
  });

  it('breaks no rule of its Content-Security-Policy, and nothing leaves for another origin', async () => {
    expect(await page.evaluate(() => (globalThis as unknown as { violations: string[] }).violations)).toEqual([]);
    // The product thumbnails are the https addresses the service sends (allowed, and blocked here): nothing else leaves.
    expect(elsewhere.filter((url) => !url.startsWith('https://cdn.example.com/p/'))).toEqual([]);
  });
});
