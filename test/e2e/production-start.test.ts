import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/*
 * The real start command (`npm start` is `node dist/main.js`; vitest's global set-up builds dist/) with NODE_ENV=production:
 * without WEBHOOK_SECRET the gateway must not start unless WEBHOOK_UNSIGNED=allow
 * says unsigned webhooks are wanted.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** Only a safety net against a hung child; nothing here measures speed. */
const GIVE_UP_MS = 30_000;

interface Run {
  child: ChildProcess;
  stdout: string;
  stderr: string;
  exited: Promise<number | null>;
}

/** Starts dist/main.js the way `npm start` does, with only the environment given (nothing inherited but PATH). */
function startMain(env: Record<string, string>): Run {
  const child = spawn(process.execPath, ['dist/main.js'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', PORT: '0', HOST: '127.0.0.1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const run: Run = {
    child,
    stdout: '',
    stderr: '',
    exited: new Promise((resolve) => child.once('exit', (code) => resolve(code))),
  };
  child.stdout.on('data', (chunk: Buffer) => (run.stdout += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (run.stderr += chunk.toString('utf8')));
  const giveUp = setTimeout(() => child.kill('SIGKILL'), GIVE_UP_MS);
  void run.exited.then(() => clearTimeout(giveUp));
  return run;
}

/** Resolves with the address once the gateway logs that it listens, or undefined when it exits first. */
async function listening(run: Run): Promise<string | undefined> {
  return new Promise((resolve) => {
    const check = () => {
      const url = /"url":"(http:\/\/[^"]+)"/.exec(run.stdout)?.[1];
      if (url) {
        run.child.stdout!.off('data', check);
        resolve(url);
      }
    };
    run.child.stdout!.on('data', check);
    void run.exited.then(() => resolve(undefined));
  });
}

describe.concurrent('starting in production', () => {
  it(
    'without WEBHOOK_SECRET: exits 1 with one line on stderr naming WEBHOOK_SECRET',
    async () => {
      const run = startMain({ NODE_ENV: 'production', API_KEYS: 'prod-key' });
      const url = await listening(run);
      if (url) run.child.kill('SIGKILL');
      expect(url, 'the gateway started listening').toBeUndefined();
      expect(await run.exited).toBe(1);
      const lines = run.stderr.split('\n').filter((line) => line.trim() !== '');
      expect(lines).toEqual([
        expect.stringMatching(/^vending-gateway: WEBHOOK_SECRET must be set when NODE_ENV=production\b.*WEBHOOK_UNSIGNED=allow/),
      ]);
    },
    GIVE_UP_MS + 5_000,
  );

  it(
    'with WEBHOOK_UNSIGNED=allow: starts, warns that webhooks are unsigned, and takes one',
    async () => {
      const run = startMain({ NODE_ENV: 'production', API_KEYS: 'prod-key', WEBHOOK_UNSIGNED: 'allow' });
      const url = await listening(run);
      try {
        expect(url, run.stderr).toBeDefined();
        expect(run.stdout).toMatch(/WEBHOOK_SECRET is not set: webhooks are accepted without a signature/);
        const body = JSON.stringify({ event: 'transaction', data: { transactionId: 't-prod', status: 'completed', products: [] } });
        const response = await fetch(`${url}/webhooks`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
        expect(response.status).toBe(200);
      } finally {
        run.child.kill('SIGTERM');
        await run.exited;
      }
    },
    GIVE_UP_MS + 5_000,
  );

  it(
    'on a port another process holds, or with METRICS_PORT equal to PORT: exits 1 with one line naming the variable',
    async () => {
      const holder = createServer();
      await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
      const { port } = holder.address() as AddressInfo;
      try {
        for (const [env, line] of [
          [{ PORT: String(port) }, /^vending-gateway: PORT: 127\.0\.0\.1:\d+ is already in use by another process$/],
          [
            { PORT: String(port + 1), METRICS_PORT: String(port + 1) },
            /^vending-gateway: METRICS_PORT: is PORT's own \(\d+\): give the metrics a port of their own$/,
          ],
        ] as const) {
          const run = startMain({ API_KEYS: 'k', LOG_LEVEL: 'silent', ...env });
          expect(await run.exited).toBe(1);
          expect(run.stderr.split('\n').filter((text) => text.trim() !== '')).toEqual([expect.stringMatching(line)]);
        }
      } finally {
        holder.close();
      }
    },
    GIVE_UP_MS + 5_000,
  );

  it(
    'with NODE_ENV set to something else than production (a typo): starts in development and says so',
    async () => {
      const run = startMain({ NODE_ENV: 'prod' });
      const url = await listening(run);
      try {
        expect(url, run.stderr).toBeDefined();
        expect(run.stdout).toMatch(/NODE_ENV=prod is not \\"production\\": running with the development defaults/);
      } finally {
        run.child.kill('SIGTERM');
        await run.exited;
      }
    },
    GIVE_UP_MS + 5_000,
  );
});
