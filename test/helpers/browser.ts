import { existsSync } from 'node:fs';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

/*
 * Debian's Chromium driven by playwright-core, for the browser tests: where
 * it is, whether it is there (`.ci/run` installs it; a machine without it
 * skips those tests, saying so), and how it starts on a machine whose
 * network is closed.
 */

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** True when Chromium is installed; otherwise warns once that `what` is skipped. */
export function chromiumFor(what: string): boolean {
  const found = existsSync(CHROMIUM);
  if (!found) console.warn(`${what} skipped: no Chromium at ${CHROMIUM} (apt-get install chromium)`);
  return found;
}

/** Headless, as root, and without the background networking a closed network refuses many times a second. */
export const launchChromium = (): Promise<Browser> =>
  chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });

/** Notes every Content-Security-Policy violation of the pages of `target` in `globalThis.violations`. */
export async function notePolicyViolations(target: Page | BrowserContext): Promise<void> {
  await target.addInitScript(() => {
    const seen: string[] = [];
    (globalThis as unknown as { violations: string[] }).violations = seen;
    document.addEventListener('securitypolicyviolation', (event) => seen.push(`${event.violatedDirective} ${event.blockedURI}`));
  });
}

/**
 * The air gap: every request of `context` to anything but `origin` (workers'
 * included) is aborted and its address noted in the list returned.
 */
export async function keepToOrigin(context: BrowserContext, origin: string): Promise<string[]> {
  const elsewhere: string[] = [];
  const local = (url: string) => url.startsWith('blob:') || url.startsWith('data:') || new URL(url).origin === origin;
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (local(url)) return route.continue();
    elsewhere.push(url);
    return route.abort('internetdisconnected');
  });
  context.on('request', (request) => {
    const url = request.url();
    if (!local(url) && !elsewhere.includes(url)) elsewhere.push(url);
  });
  return elsewhere;
}

export interface OpenDashboard {
  browser: Browser;
  context: BrowserContext;
  page: Page;
  /** Addresses other than the gateway's the page asked for (each refused). */
  elsewhere: string[];
}

/**
 * The dashboard of the gateway at `url` in a new Chromium, as an operator
 * opens it: kept to the gateway's origin, its policy violations noted, the
 * key typed in, and live (its feed connected) before it is handed over.
 */
export async function openDashboard(
  url: string,
  key: string,
  { height = 1000, locale = 'en-US' }: { height?: number; locale?: string } = {},
): Promise<OpenDashboard> {
  const browser = await launchChromium();
  const context = await browser.newContext({ viewport: { width: 1280, height }, locale });
  const elsewhere = await keepToOrigin(context, new URL(url).origin);
  await notePolicyViolations(context);
  const page = await context.newPage();
  await page.goto(`${url}/`);
  await page.locator('#key').fill(key);
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => document.getElementById('connection')?.textContent === 'live', undefined, { timeout: 10_000 });
  return { browser, context, page, elsewhere };
}
