import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { answers, freePort } from './redis-server.js';

/*
 * One redis-server (or Sentinel) process of a test's own, on a port that
 * stays its own across restarts, with no persistence: killed and started
 * again, it comes back empty. The building block of the cluster and Sentinel
 * helpers (redis-cluster.ts, redis-sentinel.ts).
 */

export interface RedisProcess {
  port: number;
  url: string;
  /** Whether the process runs now. */
  running(): boolean;
  /** Starts it (again), with `extra` arguments added for this start only; resolves once it answers PING. */
  start(extra?: string[]): Promise<void>;
  /** SIGKILL: no shutdown, nothing saved. */
  kill(): Promise<void>;
}

/** Polls `condition` (async) until it holds or `timeoutMs` passes; returns whether it held. */
export async function waitForAsync(condition: () => Promise<boolean>, timeoutMs = 20_000, everyMs = 50): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await condition().catch(() => false)) return true;
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
  return condition().catch(() => false);
}

/** A free port whose neighbour `offset` above is free too (a cluster node's bus port is its port + 10000). */
export async function freePortWith(offset: number): Promise<number> {
  for (;;) {
    const port = await freePort();
    if (port + offset > 65_535) continue;
    const { createServer } = await import('node:net');
    const free = await new Promise<boolean>((resolve) => {
      const server = createServer();
      server.once('error', () => resolve(false));
      server.listen(port + offset, '127.0.0.1', () => server.close(() => resolve(true)));
    });
    if (free) return port;
  }
}

/** A scratch directory for the processes of one helper (configs, cluster node files); removed by `remove`. */
export function scratchDirectory(name: string): { path: string; remove(): void } {
  const path = mkdtempSync(join(tmpdir(), `vg-${name}-`));
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) };
}

/**
 * A redis-server on `port`; `args` come after the port (a config file first
 * when `configFile` is given, as redis-server wants it).
 */
export function redisProcess(port: number, args: string[], configFile?: string): RedisProcess {
  let child: ChildProcess | undefined;
  const url = `redis://127.0.0.1:${port}`;
  return {
    port,
    url,
    running: () => child !== undefined && child.exitCode === null && child.signalCode === null,
    async start(extra = []) {
      const base = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', ...args, ...extra];
      child = spawn('redis-server', configFile ? [configFile, ...base] : base, { stdio: 'ignore' });
      if (!(await answers(url, 10_000))) throw new Error(`redis-server did not start on ${port}`);
    },
    async kill() {
      const running = child;
      child = undefined;
      if (!running || running.exitCode !== null || running.signalCode !== null) return;
      await new Promise((resolve) => {
        running.once('exit', resolve);
        running.kill('SIGCONT');
        running.kill('SIGKILL');
      });
    },
  };
}

/** Runs `run` on a short-lived connection to the node at `port` (no retries: a node that is down fails at once). */
export async function ask<T>(port: number, run: (client: Redis) => Promise<T>): Promise<T> {
  const client = new Redis({
    port,
    host: '127.0.0.1',
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    commandTimeout: 2_000,
  });
  client.on('error', () => {});
  try {
    await client.connect();
    return await run(client);
  } finally {
    client.disconnect();
  }
}

/** One field of an INFO answer. */
export const infoField = (info: string, field: string) => new RegExp(`^${field}:(.*)$`, 'm').exec(info)?.[1]?.trim();
