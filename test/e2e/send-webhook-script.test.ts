import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OTHER_KEY, startGateway, TEST_KEY, type RunningGateway } from '../helpers/gateway.js';

/*
 * `npm run webhook` (scripts/send-webhook.ts) run as a user runs it, against a
 * gateway on the memory backend: it finds the gateway
 * through $PORT, and a status change it sends keeps the transaction's products.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const run = promisify(execFile);
/** A demo transaction of the memory backend (the README's examples use it). */
const DEMO = ['e96a1bb8-6da9-49e4-9881-15f7e15d33a3'];

interface Outcome {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the script with the given arguments; the environment is the user's shell, minus anything that would pick another gateway. */
async function sendWebhook(args: string[], env: Record<string, string>): Promise<Outcome> {
  const { WEBHOOK_SECRET: _secret, PORT: _port, HOST: _host, API_KEYS: _keys, ...inherited } = process.env;
  try {
    const { stdout, stderr } = await run(process.execPath, ['--import', 'tsx', 'scripts/send-webhook.ts', ...args], {
      cwd: ROOT,
      env: { ...inherited, ...env },
      timeout: 30_000,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: failed.code ?? -1, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
  }
}

async function readTransaction(url: string, id: string): Promise<{ status: string; products: unknown[] }> {
  const response = await fetch(`${url}/transactions/${id}`, { headers: { authorization: TEST_KEY } });
  expect(response.status).toBe(200);
  return ((await response.json()) as { data: { status: string; products: unknown[] } }).data;
}

/** The transaction once its status is `status`: the gateway applies an event just after answering its webhook. */
async function readOnceStatusIs(url: string, id: string, status: string): Promise<{ status: string; products: unknown[] }> {
  const deadline = Date.now() + 2_000;
  for (;;) {
    const transaction = await readTransaction(url, id);
    if (transaction.status === status || Date.now() > deadline) return transaction;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('npm run webhook', () => {
  let gw: RunningGateway;
  let port: string;
  beforeAll(async () => {
    gw = await startGateway({ SIMULATOR: 'off' });
    port = new URL(gw.url).port;
  });
  afterAll(() => gw.close());

  it.each([
    ['legacy', DEMO[0]!, 'refunded'],
    ['enveloped', DEMO[0]!, 'completed'],
  ])('--form %s without --products: finds the gateway by $PORT, changes the status, keeps the products', async (form, id, status) => {
    const before = await readTransaction(gw.url, id);
    expect(before.products.length).toBeGreaterThan(0);
    const outcome = await sendWebhook(['--transaction', id, '--status', status, '--form', form], {
      PORT: port,
      API_KEYS: `${TEST_KEY},${OTHER_KEY}`,
    });
    expect(outcome, outcome.stderr).toMatchObject({ code: 0 });
    expect(outcome.stdout).toMatch(/^200\b/m);
    const after = await readOnceStatusIs(gw.url, id, status);
    expect(after.status).toBe(status);
    expect(after.products).toEqual(before.products);
  });

  it("--url an account's path: reads the products from the gateway's root, posts to that path", async () => {
    const id = DEMO[0]!;
    const before = await readTransaction(gw.url, id);
    const outcome = await sendWebhook(['--transaction', id, '--status', 'paid', '--url', `${gw.url}/webhooks/acct-a`], {
      API_KEYS: TEST_KEY,
    });
    expect(outcome, outcome.stderr).toMatchObject({ code: 0 });
    expect(outcome.stdout).toMatch(/^200\b/m);
    // Another account's webhook: the gateway's demo service (the default account's) keeps its own word.
    expect((await readTransaction(gw.url, id)).products).toEqual(before.products);
  });

  it('--key chooses the key; a key the gateway refuses stops the script with advice, sending nothing', async () => {
    const id = DEMO[0]!;
    const before = await readTransaction(gw.url, id);
    const refused = await sendWebhook(['--transaction', id, '--status', 'voided', '--key', 'not-a-key'], { PORT: port });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/401/);
    expect(refused.stderr).toMatch(/--key/);
    expect(refused.stderr).toMatch(/--products/);
    expect(await readTransaction(gw.url, id)).toEqual(before);

    const chosen = await sendWebhook(['--transaction', id, '--status', 'voided', '--key', OTHER_KEY], { PORT: port });
    expect(chosen, chosen.stderr).toMatchObject({ code: 0 });
    expect(await readOnceStatusIs(gw.url, id, 'voided')).toEqual({ ...before, status: 'voided' });
  });

  it('an unknown transaction without --products: says it was not found and how to send one anyway', async () => {
    const outcome = await sendWebhook(['--transaction', 'no-such-transaction'], { PORT: port, API_KEYS: TEST_KEY });
    expect(outcome.code).toBe(1);
    expect(outcome.stderr).toMatch(/no-such-transaction/);
    expect(outcome.stderr).toMatch(/404/);
    expect(outcome.stderr).toMatch(/--products/);
  });

  it('--products is sent as given, without asking the gateway', async () => {
    const id = DEMO[0]!;
    const products = [{ productId: 'p-script', quantity: 3 }];
    const outcome = await sendWebhook(
      [
        '--transaction',
        id,
        '--status',
        'pending',
        '--form',
        'legacy',
        '--products',
        JSON.stringify(products),
        '--url',
        `${gw.url}/webhooks`,
        '--key',
        'unused',
      ],
      {},
    );
    expect(outcome, outcome.stderr).toMatchObject({ code: 0 });
    const after = await readOnceStatusIs(gw.url, id, 'pending');
    expect(after.status).toBe('pending');
    expect(after.products).toEqual(products);
  });

  it('takes the key part of an API_KEYS entry, not its permissions and account', async () => {
    const id = DEMO[0]!;
    const scoped = await startGateway({ SIMULATOR: 'off', API_KEYS: `dash-prod-key:read+subscribe,${TEST_KEY}` });
    try {
      const outcome = await sendWebhook(['--transaction', id, '--status', 'refunded'], {
        PORT: new URL(scoped.url).port,
        API_KEYS: 'dash-prod-key:read+subscribe, other-key:pay',
      });
      expect(outcome, outcome.stderr).toMatchObject({ code: 0 });
      expect(outcome.stdout).toMatch(/^200\b/m);
    } finally {
      await scoped.close();
    }
  });

  it('prefers an entry that may read the products it sends back', async () => {
    const id = DEMO[0]!;
    const outcome = await sendWebhook(['--transaction', id, '--status', 'refunded'], {
      PORT: port,
      API_KEYS: `pay-only:pay,${OTHER_KEY}:read@default`,
    });
    // The account after "@" is no part of the key either.
    expect(outcome.stderr).not.toMatch(/401/);
  });

  it.each([['--help'], ['-h']])('%s prints the usage and exits 0, no stack trace', async (flag) => {
    const outcome = await sendWebhook([flag], {});
    expect(outcome.code).toBe(0);
    expect(outcome.stdout).toMatch(/^usage: npm run webhook/);
    expect(outcome.stdout).toMatch(/--transaction/);
    expect(outcome.stderr).toBe('');
  });

  it('an unknown option prints the usage (exit 2), no stack trace', async () => {
    const outcome = await sendWebhook(['--transction', 'x'], {});
    expect(outcome.code).toBe(2);
    expect(outcome.stderr).toMatch(/--transction/);
    expect(outcome.stderr).toMatch(/usage: npm run webhook/);
    expect(outcome.stderr).not.toMatch(/\bat .*\.(js|ts):\d+/);
  });
});
