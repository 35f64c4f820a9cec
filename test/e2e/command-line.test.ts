import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

/*
 * A newcomer's first minutes with the start command (`node dist/main.js`,
 * built by the tests' global set-up): `--help` and `--version` print and
 * exit instead of starting a server, an argument it does not know is refused
 * in one line, and a `.env` in the working directory is read, the
 * environment winning over it.
 */

const MAIN = fileURLToPath(new URL('../../dist/main.js', import.meta.url));
const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
/** Only a safety net against a hung child; nothing here measures speed. */
const GIVE_UP_MS = 30_000;

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the start command until it exits, or until its log says it listens (then it is stopped). */
function run(args: string[], options: { cwd?: string; env?: Record<string, string> } = {}): Promise<Ran> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [MAIN, ...args], {
      cwd: options.cwd ?? tmpdir(),
      env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const ran: Ran = { code: null, stdout: '', stderr: '' };
    child.stdout.on('data', (chunk: Buffer) => {
      ran.stdout += chunk.toString('utf8');
      if (ran.stdout.includes('"msg":"listening on')) child.kill('SIGTERM');
    });
    child.stderr.on('data', (chunk: Buffer) => (ran.stderr += chunk.toString('utf8')));
    const giveUp = setTimeout(() => child.kill('SIGKILL'), GIVE_UP_MS);
    child.once('exit', (code) => {
      clearTimeout(giveUp);
      resolve({ ...ran, code });
    });
  });
}

describe('the start command', () => {
  const dirs: string[] = [];
  afterAll(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  for (const flag of ['--help', '-h']) {
    it(`${flag} prints how to run and configure it, and exits 0 without listening`, async () => {
      const { code, stdout, stderr } = await run([flag], { env: { PORT: '0' } });
      expect(code).toBe(0);
      expect(stderr).toBe('');
      expect(stdout).toMatch(/^Usage: /);
      expect(stdout).toContain('.env');
      expect(stdout).toContain('--version');
      expect(stdout).not.toContain('listening');
    });
  }

  for (const flag of ['--version', '-v']) {
    it(`${flag} prints the version and exits 0`, async () => {
      const { code, stdout } = await run([flag]);
      expect(code).toBe(0);
      expect(stdout).toBe(`vending-gateway ${VERSION}\n`);
    });
  }

  it('refuses an argument it does not know in one line, exit code 2', async () => {
    const { code, stdout, stderr } = await run(['--port=3000']);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toBe('vending-gateway: unknown argument "--port=3000": configure it with environment variables (--help)\n');
  });

  it('reads .env from the working directory, the environment winning over it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vg-dotenv-'));
    dirs.push(dir);
    writeFileSync(join(dir, '.env'), '# a comment\nPORT=0\nAPI_KEYS=from-the-file\nLOG_LEVEL=debug\nRATE_LIMIT_PER_SECOND="7"\n');
    const { stdout } = await run([], { cwd: dir, env: { LOG_LEVEL: 'info' } });
    const listening = /"url":"(http:[^"]+)"/.exec(stdout);
    expect(listening, stdout).not.toBeNull();
    // The file's PORT=0 was taken (a free port), its LOG_LEVEL was not (the environment's info wins: no debug lines).
    expect(stdout).not.toContain('"level":20');
    expect(stdout).toContain('"msg":"read 4 variables from .env (the environment wins over it)"');
    expect(stdout).not.toContain('development API key');
  });

  it('a bad value in .env stops it with one line naming the variable, as in the environment', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vg-dotenv-'));
    dirs.push(dir);
    writeFileSync(join(dir, '.env'), 'PORT=abc\n');
    const { code, stderr } = await run([], { cwd: dir });
    expect(code).toBe(1);
    expect(stderr).toMatch(/^vending-gateway: PORT/);
  });
});
