import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { TEST_KEY } from '../helpers/gateway.js';
import { sseSubscribe } from '../helpers/sse-client.js';
import { waitFor } from '../helpers/wait-for.js';

/*
 * The README's start command, stopped the way a process manager or a
 * container runtime stops it: SIGTERM to the process it started (`npm`).
 * The gateway itself must get the signal and drain (an open SSE stream
 * ends the way graceful shutdown ends it, without `complete`), and nothing
 * of the process tree may remain running. Under
 * `tsx src/main.ts` the signal reached npm and tsx, and the gateway went on,
 * orphaned.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** Only a safety net against a hung child; nothing here measures speed. */
const GIVE_UP_MS = 30_000;

/** Every process whose parent chain leads to `root` (Linux /proc). */
function descendants(root: number): number[] {
  const parents = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // The command name is in parentheses and may hold spaces: the fields after it are fixed.
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parents.set(Number(entry), ppid);
    } catch {
      // Gone while listed.
    }
  }
  const found: number[] = [];
  const walk = (pid: number) => {
    for (const [child, parent] of parents)
      if (parent === pid) {
        found.push(child);
        walk(child);
      }
  };
  walk(root);
  return found;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('SIGTERM to the README start command', () => {
  it(
    'reaches the gateway, which drains, and leaves no process behind',
    async () => {
      const npm = spawn('npm', ['start'], {
        cwd: ROOT,
        env: { ...process.env, PORT: '0', HOST: '127.0.0.1', API_KEYS: TEST_KEY, LOG_LEVEL: 'info', SHUTDOWN_GRACE_MS: '0' },
        stdio: ['ignore', 'pipe', 'pipe'],
        // Its own process group, so that whatever this test leaves behind can be ended by the group's id.
        detached: true,
      });
      let stdout = '';
      let stderr = '';
      npm.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
      npm.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
      const exited = new Promise<number | null>((resolve) => npm.once('exit', (code) => resolve(code)));
      let tree: number[] = [];
      try {
        expect(await waitFor(() => /"url":"http[^"]+"/.test(stdout), GIVE_UP_MS, 50), `${stdout}\n${stderr}`).toBe(true);
        const url = /"url":"(http[^"]+)"/.exec(stdout)![1]!;
        tree = descendants(npm.pid!);
        expect(tree.length).toBeGreaterThan(0);

        // Work in flight: a live subscription, which graceful shutdown ends without `complete` so its client resumes.
        const sse = await sseSubscribe(url, 'subscription { transactionUpdated { eventId } }', TEST_KEY);
        expect(sse.status).toBe(200);

        npm.kill('SIGTERM');
        const ended = await Promise.race([sse.ended, new Promise((resolve) => setTimeout(() => resolve('still open'), 15_000))]);
        expect(ended, 'the SSE stream, once npm got SIGTERM').toBe('end');
        expect(await Promise.race([exited, new Promise((resolve) => setTimeout(() => resolve('running'), 15_000))])).toBe(0);
        // The gateway's own log says it got the signal and finished its graceful shutdown.
        expect(stdout).toMatch(/"signal":"SIGTERM"[^\n]*"msg":"shutting down"/);
        expect(stdout).toMatch(/"msg":"stopped"/);
        expect(await waitFor(() => tree.every((pid) => !alive(pid)), 5_000, 50), `still running: ${tree.filter(alive).join(', ')}`).toBe(
          true,
        );
        const answer = await fetch(`${url}/healthz`).then(
          (response) => response.status,
          () => 'refused',
        );
        expect(answer, 'the port after the stop').toBe('refused');
      } finally {
        for (const pid of [npm.pid!, ...tree]) if (alive(pid)) process.kill(pid, 'SIGKILL');
      }
    },
    GIVE_UP_MS * 2,
  );
});
