import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { boundClusterCommands, boundCommands, startDeadline } from '../../src/redis/command-deadline.js';
import { redisServerOnPath, startTestRedis, type TestRedis } from '../helpers/redis-server.js';
import { waitFor } from '../helpers/wait-for.js';

/*
 * The deadline of a Redis command is judged by Redis, never by a late event
 * loop: an answer that arrived while the loop was busy is read before any
 * decision, the bound is counted from the write, and a Redis that truly does
 * not answer is still named.
 */

const BOUND_MS = 200;

/** Keeps this process's event loop busy: nothing else runs meanwhile. */
function starve(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // busy
  }
}

/** Runs `work` in a check-phase callback: the timers that come due meanwhile run before the next poll phase reads a socket. */
const inCheckPhase = (work: () => void) => new Promise<void>((resolve) => setImmediate(() => (work(), resolve())));

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('startDeadline', () => {
  let server: Server;
  let client: Socket;
  let peer: Socket;

  beforeAll(async () => {
    const accepted = new Promise<Socket>((resolve) => (server = createServer(resolve)));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    client = connect(port, '127.0.0.1');
    peer = await accepted;
  });

  afterAll(async () => {
    client.destroy();
    peer.destroy();
    await new Promise((resolve) => server.close(resolve));
  });

  it('reads an answer that arrived while the loop was busy before deciding; a plain timer would not have', async () => {
    let answered = false;
    const onData = () => (answered = true);
    client.once('data', onData);
    let expired = false;
    let plainTimerSaw: boolean | undefined;
    await inCheckPhase(() => {
      startDeadline(
        BOUND_MS,
        () => answered,
        () => (expired = true),
      );
      setTimeout(() => (plainTimerSaw = answered), BOUND_MS);
      // The answer is in this process's socket buffer at once (loopback), unread until the loop polls.
      peer.write('+OK\r\n');
      starve(3 * BOUND_MS);
    });
    expect(await waitFor(() => answered, 5_000)).toBe(true);
    await sleep(3 * BOUND_MS);
    expect(plainTimerSaw).toBe(false);
    expect(expired).toBe(false);
  });

  it('gives the whole bound to a deadline started at the end of a long callback', async () => {
    let startedAt = 0;
    let expiredAt = 0;
    await inCheckPhase(() => {
      starve(2 * BOUND_MS);
      startedAt = performance.now();
      startDeadline(
        BOUND_MS,
        () => false,
        () => (expiredAt = performance.now()),
      );
    });
    expect(await waitFor(() => expiredAt > 0, 5_000)).toBe(true);
    expect(expiredAt - startedAt).toBeGreaterThanOrEqual(BOUND_MS - 1);
  });

  it('names an answer that never comes once the bound has passed, with the loop free', async () => {
    let expiredAt = 0;
    const startedAt = performance.now();
    startDeadline(
      BOUND_MS,
      () => false,
      () => (expiredAt = performance.now()),
    );
    expect(await waitFor(() => expiredAt > 0, 5_000)).toBe(true);
    expect(expiredAt - startedAt).toBeGreaterThanOrEqual(BOUND_MS - 1);
  });

  it('after the loop was away past the deadline, waits again (at most one more bound) before naming a silence', async () => {
    let expiredAt = 0;
    let awakeAt = 0;
    await inCheckPhase(() => {
      startDeadline(
        BOUND_MS,
        () => false,
        () => (expiredAt = performance.now()),
      );
      starve(3 * BOUND_MS);
      awakeAt = performance.now();
    });
    expect(await waitFor(() => expiredAt > 0, 10 * BOUND_MS)).toBe(true);
    // Away 2 bounds past the deadline: one more bound of grace, no more.
    expect(expiredAt - awakeAt).toBeGreaterThanOrEqual(BOUND_MS - 1);
  });

  it('says nothing once cancelled', async () => {
    let expired = false;
    startDeadline(
      BOUND_MS,
      () => false,
      () => (expired = true),
    ).cancel();
    await sleep(2 * BOUND_MS);
    expect(expired).toBe(false);
  });
});

// A Redis of the test's own, to pause it (SIGSTOP).
describe.skipIf(!redisServerOnPath())('boundCommands on an ioredis connection', () => {
  let redis: TestRedis;
  const connections: Redis[] = [];
  const open = (bounded: boolean) => {
    const connection = bounded
      ? new Redis(redis.url, { enableOfflineQueue: false, maxRetriesPerRequest: 1 })
      : new Redis(redis.url, { commandTimeout: BOUND_MS, socketTimeout: BOUND_MS });
    if (bounded) boundCommands(connection, BOUND_MS);
    connection.on('error', () => {});
    connections.push(connection);
    return connection;
  };
  const ready = (connection: Redis) => waitFor(() => connection.status === 'ready', 5_000);

  beforeAll(async () => {
    redis = await startTestRedis();
  });

  afterAll(async () => {
    for (const connection of connections) connection.disconnect();
    await redis?.close();
  });

  it('wraps a connection once however often it is asked', () => {
    const connection = open(true);
    const wrapped = connection.sendCommand;
    expect(wrapped).not.toBe(Redis.prototype.sendCommand);
    boundCommands(connection, BOUND_MS);
    expect(connection.sendCommand).toBe(wrapped);
  });

  it('gets the answers Redis gave while the loop was busy, and keeps the connection; ioredis timeouts alone drop both', async () => {
    const bounded = open(true);
    const plain = open(false);
    expect(await ready(bounded)).toBe(true);
    expect(await ready(plain)).toBe(true);
    let closed = 0;
    bounded.on('close', () => closed++);
    const outcome = (promise: Promise<unknown>) =>
      promise.then(
        () => 'answered',
        (error: Error) => error.message,
      );
    let answers: Array<Promise<string>> = [];
    await inCheckPhase(() => {
      answers = [
        outcome(bounded.set('late-loop', '1')),
        outcome(bounded.multi().incr('late-loop').get('late-loop').exec()),
        outcome(bounded.ping()),
        outcome(plain.ping()),
      ];
      starve(3 * BOUND_MS);
    });
    expect(await Promise.all(answers)).toEqual(['answered', 'answered', 'answered', 'Command timed out']);
    expect(bounded.status).toBe('ready');
    expect(closed).toBe(0);
  });

  it('keeps a quiet subscribed connection whose command was refused before it was written', async () => {
    const subscribed = open(true);
    expect(await ready(subscribed)).toBe(true);
    await subscribed.subscribe('quiet');
    let closed = 0;
    subscribed.on('close', () => closed++);
    await expect(subscribed.get('not-in-subscriber-mode')).rejects.toThrow(/subscriber mode/);
    await sleep(3 * BOUND_MS);
    expect(closed).toBe(0);
    expect(subscribed.status).toBe('ready');
  });

  it('rejects commands of a Redis that stopped answering, drops the connection, and works again once it answers', async () => {
    const connection = open(true);
    expect(await ready(connection)).toBe(true);
    redis.pause();
    try {
      const started = performance.now();
      await expect(connection.get('stalled')).rejects.toThrow('Command timed out');
      const tookMs = Math.round(performance.now() - started);
      console.info('stalled Redis: command rejected after', tookMs, 'ms');
      // Generous (a shared machine): a deadline that waited for unrelated I/O took seconds.
      expect(tookMs).toBeLessThan(3_000);
      expect(await waitFor(() => connection.status !== 'ready', 5_000)).toBe(true);
      await expect(connection.get('stalled')).rejects.toThrow();
    } finally {
      redis.resume();
    }
    expect(await ready(connection)).toBe(true);
    expect(await connection.get('stalled')).toBeNull();
  });
});

/** A one-node Redis Cluster (every slot on one master) on a free port: enough to see each node connection bounded. */
async function startOneNodeCluster(): Promise<{ port: number; server: ChildProcess; close(): Promise<void> }> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  const dir = mkdtempSync(join(tmpdir(), 'deadline-cluster-'));
  const server = spawn(
    'redis-server',
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--cluster-enabled',
      'yes',
      '--cluster-announce-ip',
      '127.0.0.1',
      '--dir',
      dir,
      '--save',
      '',
      '--appendonly',
      'no',
    ],
    { stdio: 'ignore' },
  );
  const admin = new Redis(port, '127.0.0.1', { retryStrategy: () => 50 });
  admin.on('error', () => {});
  try {
    await admin.call('CLUSTER', 'ADDSLOTSRANGE', '0', '16383');
    for (let attempt = 0; attempt < 100 && !/cluster_state:ok/.test(String(await admin.call('CLUSTER', 'INFO'))); attempt++)
      await sleep(50);
  } finally {
    admin.disconnect();
  }
  return {
    port,
    server,
    async close() {
      if (server.exitCode === null) {
        const exited = new Promise((resolve) => server.once('exit', resolve));
        server.kill('SIGCONT');
        server.kill('SIGKILL');
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

describe.skipIf(!redisServerOnPath())('boundClusterCommands on an ioredis Cluster', () => {
  let node: Awaited<ReturnType<typeof startOneNodeCluster>>;
  let cluster: Cluster;

  beforeAll(async () => {
    node = await startOneNodeCluster();
    cluster = new Cluster([{ host: '127.0.0.1', port: node.port }], { enableOfflineQueue: false });
    boundClusterCommands(cluster, BOUND_MS);
    cluster.on('error', () => {});
    cluster.on('node error', () => {});
    expect(await waitFor(() => cluster.status === 'ready', 10_000)).toBe(true);
  });

  afterAll(async () => {
    cluster?.disconnect();
    await node?.close();
  });

  it('bounds the node connections it makes', () => {
    const nodes = cluster.nodes('all');
    expect(nodes.length).toBeGreaterThan(0);
    for (const connection of nodes) expect(connection.sendCommand).not.toBe(Redis.prototype.sendCommand);
  });

  it('gets the answers a node gave while the loop was busy', async () => {
    let answer: Promise<unknown> = Promise.resolve();
    await inCheckPhase(() => {
      answer = cluster.set('{late}loop', '1');
      starve(3 * BOUND_MS);
    });
    await expect(answer).resolves.toBe('OK');
  });

  it('rejects a command of a node that stopped answering', async () => {
    node.server.kill('SIGSTOP');
    try {
      const started = performance.now();
      await expect(cluster.get('{late}loop')).rejects.toThrow('Command timed out');
      const tookMs = Math.round(performance.now() - started);
      console.info('stalled cluster node: command rejected after', tookMs, 'ms');
      expect(tookMs).toBeLessThan(3_000);
    } finally {
      node.server.kill('SIGCONT');
    }
  });
});
