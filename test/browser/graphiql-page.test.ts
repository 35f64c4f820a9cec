import { gunzipSync } from 'node:zlib';
import type { Browser, BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDemoData } from '../../src/backends/memory/demo-data.js';
import { chromiumFor, keepToOrigin, launchChromium, notePolicyViolations } from '../helpers/browser.js';
import { startGateway, TEST_KEY, type RunningGateway } from '../helpers/gateway.js';

/*
 * GraphiQL on an air-gapped machine: in Chromium (Debian's, driven by
 * playwright-core) with every request to anything but the gateway aborted,
 * the page loads from the gateway's own assets under its
 * Content-Security-Policy, takes a key in its headers editor and runs a
 * query. yoga's own page loads GraphiQL from a CDN: it never renders here.
 */
const hasChromium = chromiumFor('GraphiQL browser test');

const demo = createDemoData();
const pageOf = (url: string, accept = 'text/html') => fetch(`${url}/graphql`, { headers: { accept } });
/** The asset URLs the page names, in its order. */
const assetsOf = (html: string) => [...html.matchAll(/(?:src|href)="(\/graphiql\/[^"]+)"/g)].map((match) => match[1]!);

describe('GraphiQL page and assets', () => {
  let running: RunningGateway;
  beforeAll(async () => {
    running = await startGateway();
  });
  afterAll(() => running?.close());

  it('serves a page that names only its own assets, under a policy that allows no other source', async () => {
    const response = await pageOf(running.url);
    expect(response.status).toBe(200);
    const policy = response.headers.get('content-security-policy') ?? '';
    expect(policy).toContain("default-src 'none'");
    expect(policy).toContain("script-src 'self'");
    // Nothing but the gateway itself (and data: for images and fonts) anywhere in the policy.
    for (const source of policy.split(';').flatMap((directive) => directive.trim().split(/\s+/).slice(1))) {
      expect(["'self'", "'none'", "'unsafe-inline'", 'data:']).toContain(source);
    }
    const html = await response.text();
    expect(html).not.toMatch(/(?:src|href)="(?:https?:)?\/\//);
    // No inline script the policy would have to allow: the options travel as JSON.
    expect(html.match(/<script(?![^>]*\bsrc=)(?![^>]*type="application\/json")[^>]*>/g)).toBeNull();
    expect(assetsOf(html)).toHaveLength(5);
  });

  it('serves each asset gzipped or plain, cached for good under its content hash; another hash is a 404', async () => {
    const html = await (await pageOf(running.url)).text();
    const script = assetsOf(html).find((path) => path.endsWith('/graphiql.js'))!;
    const plain = await fetch(`${running.url}${script}`, { headers: { 'accept-encoding': 'identity' } });
    expect(plain.status).toBe(200);
    expect(plain.headers.get('content-type')).toMatch(/^text\/javascript/);
    expect(plain.headers.get('cache-control')).toContain('immutable');
    const body = Buffer.from(await plain.arrayBuffer());
    expect(body.toString('utf8')).toContain('renderYogaGraphiQL');
    // Node's fetch would undo the encoding: ask over plain HTTP through undici's lower level instead.
    const { request } = await import('undici');
    const gzipped = await request(`${running.url}${script}`, { headers: { 'accept-encoding': 'gzip' } });
    expect(gzipped.headers['content-encoding']).toBe('gzip');
    const packed = Buffer.from(await gzipped.body.arrayBuffer());
    expect(packed.length).toBeLessThan(body.length / 2);
    expect(gunzipSync(packed).equals(body)).toBe(true);
    expect((await fetch(`${running.url}/graphiql/0000000000000000/graphiql.js`)).status).toBe(404);
    expect((await fetch(`${running.url}${script.replace('graphiql.js', 'other.js')}`)).status).toBe(404);
  });

  it('is off with GRAPHIQL=off and in production unless asked for: a browser gets no page and no assets', async () => {
    const production = { NODE_ENV: 'production', WEBHOOK_UNSIGNED: 'allow' };
    for (const [env, served] of [
      [{ GRAPHIQL: 'off' }, false],
      [production, false],
      [{ ...production, GRAPHIQL: 'on' }, true],
    ] as const) {
      const other = await startGateway(env);
      try {
        const response = await pageOf(other.url);
        const html = await response.text();
        expect(response.status, JSON.stringify(env)).toBe(served ? 200 : 401);
        expect(response.headers.has('content-security-policy')).toBe(served);
        if (served) expect(assetsOf(html)).toHaveLength(5);
        expect((await fetch(`${other.url}/graphiql/0000000000000000/graphiql.js`)).status).toBe(404);
      } finally {
        await other.close();
      }
    }
  });
});

const browserCases: Array<[string, Record<string, string>]> = [
  ['in development', {}],
  // Introspection is off there: GraphiQL has no schema to complete with, and still runs what is typed.
  ['in production with GRAPHIQL=on', { NODE_ENV: 'production', WEBHOOK_UNSIGNED: 'allow', GRAPHIQL: 'on' }],
];

describe.skipIf(!hasChromium).each(browserCases)('GraphiQL in a browser with no internet, %s', (_name, env) => {
  let running: RunningGateway;
  let browser: Browser;
  let context: BrowserContext;
  let elsewhere: string[] = [];

  beforeAll(async () => {
    running = await startGateway(env);
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    // The air gap: anything not for the gateway is noted and aborted, workers' requests included.
    elsewhere = await keepToOrigin(context, new URL(running.url).origin);
    await notePolicyViolations(context);
  }, 30_000);
  afterAll(async () => {
    await browser?.close();
    await running?.close();
  });

  it('runs a query typed into it, with the key in its headers editor, and nothing leaves the gateway', async () => {
    const page = await context.newPage();
    await page.goto(`${running.url}/graphql`);
    const query = page.locator('.graphiql-query-editor .monaco-editor').first();
    await query.waitFor({ timeout: 20_000 });

    await page.getByRole('button', { name: 'Headers' }).click();
    await page.locator('.graphiql-editor-tool .monaco-editor').last().click();
    await page.keyboard.press('ControlOrMeta+A');
    await page.keyboard.insertText(JSON.stringify({ Authorization: TEST_KEY }));

    await query.click();
    await page.keyboard.press('ControlOrMeta+A');
    await page.keyboard.insertText('query Fleet { vendings { totalCount } }');
    await page.locator('.graphiql-execute-button').click();

    const response = page.locator('.graphiql-response');
    await expect.poll(() => response.textContent(), { timeout: 10_000 }).toContain('totalCount');
    expect((await response.textContent())?.replace(/\s/g, '')).toContain(`"totalCount":${demo.vendings.length}`);
    expect(elsewhere).toEqual([]);
    expect(await page.evaluate(() => (globalThis as unknown as { violations: string[] }).violations)).toEqual([]);
  }, 40_000);
});
