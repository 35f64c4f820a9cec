import { randomUUID } from 'node:crypto';
import { createServer, type Server, type Socket } from 'node:net';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisClients, type RedisClients } from '../../src/redis/redis-clients.js';
import { redisKeys } from '../../src/redis/redis-keys.js';
import { redisServerOnPath, startTestRedis, type TestRedis } from '../helpers/redis-server.js';
import { waitFor } from '../helpers/wait-for.js';

/*
 * The instance's Sentinel connections follow a failover the Sentinels
 * announce (+switch-master), and come back whenever they are lost, whatever
 * the Sentinels announce meanwhile. The Sentinel here is a stand-in the test
 * drives, so the moment of each answer and announcement is the test's: in a
 * real group the Sentinels announce one failover one after another, and one
 * may come while a connection that lost its master asks a Sentinel for the
 * new one (redis-sentinel.test.ts fails a real group over).
 */

const NAME = 'vg-stand-in-master';

/** RESP: a bulk string for a string, an integer for a number, an array for an array. */
const resp = (value: string | number | ReadonlyArray<string | number>): string =>
  typeof value === 'number'
    ? `:${value}\r\n`
    : typeof value === 'string'
      ? `$${Buffer.byteLength(value)}\r\n${value}\r\n`
      : `*${value.length}\r\n${value.map(resp).join('')}`;

/** The commands a client sent, each an array of strings, read from RESP arrays of bulk strings as far as they are whole. */
function readCommands(buffer: Buffer): { commands: string[][]; rest: Buffer } {
  const commands: string[][] = [];
  let at = 0;
  for (;;) {
    const start = at;
    const line = (from: number) => {
      const end = buffer.indexOf('\r\n', from);
      return end < 0 ? undefined : { text: buffer.toString('utf8', from, end), next: end + 2 };
    };
    const head = line(at);
    if (!head || !head.text.startsWith('*')) return { commands, rest: buffer.subarray(start) };
    const count = Number(head.text.slice(1));
    at = head.next;
    const args: string[] = [];
    for (let index = 0; index < count; index++) {
      const size = line(at);
      if (!size) return { commands, rest: buffer.subarray(start) };
      const length = Number(size.text.slice(1));
      if (buffer.length < size.next + length + 2) return { commands, rest: buffer.subarray(start) };
      args.push(buffer.toString('utf8', size.next, size.next + length));
      at = size.next + length + 2;
    }
    commands.push(args);
  }
}

interface StandInSentinel {
  port: number;
  /** The clients subscribed to +switch-master now. */
  subscribers(): number;
  /** While held, a question for the master's address waits for `release` (a Sentinel slow to answer). */
  hold(): void;
  /** Answers the questions held, and those that come later, at once. */
  release(): void;
  /** The questions for the master's address waiting now. */
  held(): number;
  /** Publishes +switch-master to every subscriber. */
  announce(message: string): void;
  close(): Promise<void>;
}

/** A Sentinel that names `master` for NAME, answering just what ioredis asks of one. */
async function startStandInSentinel(master: { host: string; port: number }): Promise<StandInSentinel> {
  const subscribed = new Set<Socket>();
  const sockets = new Set<Socket>();
  let holding = false;
  let waiting: Array<() => void> = [];
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => {
      sockets.delete(socket);
      subscribed.delete(socket);
    });
    socket.on('error', () => {});
    let pending: Buffer = Buffer.alloc(0);
    socket.on('data', (chunk) => {
      const { commands, rest } = readCommands(Buffer.concat([pending, chunk]));
      pending = rest;
      for (const [command = '', ...args] of commands) {
        const name = command.toUpperCase();
        const sub = (args[0] ?? '').toUpperCase();
        if (name === 'SUBSCRIBE') {
          subscribed.add(socket);
          args.forEach((channel, index) => socket.write(resp(['subscribe', channel, index + 1])));
        } else if (name === 'SENTINEL' && sub === 'GET-MASTER-ADDR-BY-NAME') {
          const answer = () => void (socket.writable && socket.write(resp([master.host, String(master.port)])));
          if (holding) waiting.push(answer);
          else answer();
        } else if (name === 'SENTINEL' && sub === 'SENTINELS') socket.write('*0\r\n');
        else if (name === 'PING') socket.write('+PONG\r\n');
        else socket.write('+OK\r\n');
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    port,
    subscribers: () => subscribed.size,
    hold: () => void (holding = true),
    release() {
      holding = false;
      const answers = waiting;
      waiting = [];
      for (const answer of answers) answer();
    },
    held: () => waiting.length,
    announce(message) {
      for (const socket of subscribed) socket.write(resp(['message', '+switch-master', message]));
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

describe.skipIf(!redisServerOnPath())('Sentinel connections (REDIS_SENTINELS)', () => {
  let redis: TestRedis;
  let port: number;
  let sentinel: StandInSentinel;
  let clients: RedisClients;
  let connections: Redis[];
  /** How many times each connection closed. */
  let closes: number[];

  beforeAll(async () => {
    redis = await startTestRedis();
    port = Number(new URL(redis.url).port);
    sentinel = await startStandInSentinel({ host: '127.0.0.1', port });
    clients = createRedisClients(
      {
        kind: 'sentinel',
        sentinels: [{ host: '127.0.0.1', port: sentinel.port }],
        sentinelAccess: { tls: false },
        name: NAME,
        access: { tls: false },
      },
      { commandTimeoutMs: 1_000, probeKey: redisKeys(`sentinel-reconnect-${randomUUID().slice(0, 8)}:`).writeProbe },
    );
    connections = [clients.commands as Redis, clients.appends, clients.tail];
    closes = connections.map(() => 0);
    connections.forEach((connection, index) => connection.on('close', () => void closes[index]!++));
  });
  afterAll(async () => {
    await clients?.close();
    await sentinel?.close();
    await redis?.close();
  });

  const allReady = () => connections.every((connection) => connection.status === 'ready');

  it('listen to the Sentinel for failovers once up', async () => {
    expect(await clients.connected(5_000)).toBe(true);
    expect(await waitFor(allReady, 5_000)).toBe(true);
    expect(await waitFor(() => sentinel.subscribers() >= 1, 5_000)).toBe(true);
  });

  it('follow a failover announced while they are up on another node: each asks the Sentinel again', async () => {
    const before = [...closes];
    sentinel.announce(`${NAME} 127.0.0.1 ${port} 127.0.0.2 ${port}`);
    expect(await waitFor(() => closes.every((count, index) => count > before[index]!), 5_000)).toBe(true);
    expect(await waitFor(allReady, 5_000)).toBe(true);
    expect(await waitFor(() => clients.writable(), 5_000)).toBe(true);
  });

  it('stay up when a Sentinel announces the failover to the master they are on already', async () => {
    const before = [...closes];
    sentinel.announce(`${NAME} 127.0.0.1 ${port + 1} 127.0.0.1 ${port}`);
    sentinel.announce(`other-master 127.0.0.1 ${port} 127.0.0.1 ${port + 1}`);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(closes).toEqual(before);
    expect(allReady()).toBe(true);
  });

  it('come back when a failover is announced while they ask the Sentinel for the master again', async () => {
    // The master drops them (as one that died does); they ask the Sentinel again, which is slow to answer.
    sentinel.hold();
    const admin = new Redis(redis.url);
    await admin.client('KILL', 'TYPE', 'normal');
    admin.disconnect();
    expect(await waitFor(() => sentinel.held() >= connections.length, 5_000)).toBe(true);
    // Meanwhile the Sentinel announces a failover; the Sentinels of a real group announce one after another.
    sentinel.announce(`${NAME} 127.0.0.1 ${port + 1} 127.0.0.1 ${port}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
    sentinel.release();

    expect(await waitFor(allReady, 5_000)).toBe(true);
    expect(await waitFor(() => clients.writable(), 5_000)).toBe(true);
  });
});
