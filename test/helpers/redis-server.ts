import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer } from 'node:net';
import { Redis } from 'ioredis';

/*
 * A throwaway redis-server on a free port when the binary is on PATH (so a
 * test may stop and restart it); else the Redis named by REDIS_URL (or the
 * machine's 127.0.0.1:6379), which a test may use but not restart.
 */

export interface TestRedis {
  url: string;
  /** Whether this helper owns the server and can restart it. */
  restartable: boolean;
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Writes the data to disk (SAVE): the next `start()` loads it, as a Redis with persistence would. */
  save(): Promise<void>;
  /** Freezes the server (SIGSTOP): connections stay open and nothing answers, a stalled Redis. */
  pause(): void;
  /** Lets a paused server go on (SIGCONT). */
  resume(): void;
  close(): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export async function answers(url: string, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    client.on('error', () => {});
    try {
      await client.connect();
      if ((await client.ping()) === 'PONG') return true;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 50));
    } finally {
      client.disconnect();
    }
  }
  return false;
}

/** Whether a test can run its own redis-server (and so restart or pause it). */
export const redisServerOnPath = (): boolean => spawnSync('redis-server', ['--version']).status === 0;

/**
 * `args`: more redis-server arguments (e.g. `--replicaof 127.0.0.1 <port>`, `--maxmemory-policy …`); only for a server of the test's own.
 */
export async function startTestRedis(args: readonly string[] = []): Promise<TestRedis> {
  if (!redisServerOnPath()) {
    const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
    if (args.length > 0) throw new Error('a test that starts redis-server with arguments needs the binary on PATH');
    if (!(await answers(url, 2_000))) throw new Error(`no redis-server on PATH and none answering at ${url}`);
    const unsupported = async () => {
      throw new Error("this Redis is not the test's own: it cannot be restarted");
    };
    const refuse = () => {
      throw new Error("this Redis is not the test's own: it cannot be paused");
    };
    return {
      url,
      restartable: false,
      stop: unsupported,
      start: unsupported,
      save: unsupported,
      pause: refuse,
      resume: refuse,
      close: async () => {},
    };
  }
  const port = await freePort();
  const url = `redis://127.0.0.1:${port}`;
  let child: ChildProcess | undefined;
  // Its own directory: a `save()` there is what the next start loads, and nothing is left behind.
  const dir = mkdtempSync(join(tmpdir(), 'test-redis-'));
  const start = async () => {
    child = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, ...args],
      { stdio: 'ignore' },
    );
    if (!(await answers(url, 5_000))) throw new Error(`redis-server did not start on ${port}`);
  };
  const signal = (name: NodeJS.Signals) => {
    if (!child || child.exitCode !== null) throw new Error('redis-server is not running');
    child.kill(name);
  };
  const stop = async () => {
    const running = child;
    child = undefined;
    if (!running || running.exitCode !== null) return;
    await new Promise((resolve) => {
      running.once('exit', resolve);
      // SIGKILL ends a paused process too; SIGCONT first so nothing is left stopped should the kill be refused.
      running.kill('SIGCONT');
      running.kill('SIGKILL');
    });
  };
  await start();
  const save = async () => {
    const client = new Redis(url, { maxRetriesPerRequest: 0 });
    try {
      await client.save();
    } finally {
      client.disconnect();
    }
  };
  const close = async () => {
    await stop();
    rmSync(dir, { recursive: true, force: true });
  };
  return { url, restartable: true, start, stop, save, pause: () => signal('SIGSTOP'), resume: () => signal('SIGCONT'), close };
}
