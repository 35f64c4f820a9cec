import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { spawnNode, type Child } from './children.js';

export interface RedisChild extends Child {
  redisUrl: string;
  /** `used_memory` (bytes allocated for data and overhead, as Redis counts it). */
  usedMemory(): Promise<number>;
  /** Redis's CPU seconds (user + system) as INFO reports them: cpuSeconds() is the wrapper process's, not the server's. */
  serverCpuSeconds(): Promise<number>;
  /** A key prefix of its own for one gateway (REDIS_PREFIX). */
  newPrefix(label: string): string;
}

function client(url: string): Redis {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  redis.on('error', () => {});
  return redis;
}

/** A section of the server's INFO, field by field. */
export async function redisInfo(url: string, section: string): Promise<Map<string, string>> {
  const redis = client(url);
  try {
    await redis.connect();
    const text = await redis.info(section);
    return new Map(
      text
        .split('\r\n')
        .filter((l) => l.includes(':'))
        .map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 1)]),
    );
  } finally {
    redis.disconnect();
  }
}

/** `args`: more redis-server arguments (a replica's `--replicaof`, a cluster node's options). */
export async function startRedis(args: string[] = []): Promise<RedisChild> {
  const toRedis = (httpUrl: string) => httpUrl.replace(/^http:/, 'redis:');
  const child = await spawnNode({
    name: 'redis-server',
    entry: 'bench/lib/redis-main.ts',
    args,
    env: {},
    async ready(url) {
      const redis = client(toRedis(url));
      try {
        await redis.connect();
        return (await redis.ping()) === 'PONG';
      } finally {
        redis.disconnect();
      }
    },
  });
  const redisUrl = toRedis(child.url);
  return {
    ...child,
    redisUrl,
    async usedMemory() {
      return Number((await redisInfo(redisUrl, 'memory')).get('used_memory'));
    },
    async serverCpuSeconds() {
      const cpu = await redisInfo(redisUrl, 'cpu');
      return Number(cpu.get('used_cpu_user')) + Number(cpu.get('used_cpu_sys'));
    },
    newPrefix: (label) => `bench-${label}-${randomUUID().slice(0, 8)}:`,
  };
}
