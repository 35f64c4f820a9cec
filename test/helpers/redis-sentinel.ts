import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from './redis-server.js';
import { ask, infoField, redisProcess, scratchDirectory, waitForAsync, type RedisProcess } from './redis-process.js';

/*
 * A real Sentinel group of the test's own: a master, `replicas` replicas and
 * `sentinels` Sentinels (quorum: a majority), on free ports, no persistence,
 * with a short down-after and failover timeout so a killed master is
 * replaced within seconds. Stopped (every process killed, its files
 * removed) by close().
 *
 * Sentinel's own clocks are set short too (SENTINEL DEBUG, Redis 7): a test
 * waits on Sentinel's pace, so it drives that pace. By default a returning
 * old master is made a replica only after its INFO (every 10 s) has reported
 * the wrong role for four hello periods (8 s), and a Sentinel whose timer ran
 * late (a busy machine) enters TILT and acts on nothing for 30 s: a
 * demotion took over 100 s with the whole suite running on two cores.
 *
 * The ping period is kept well below down-after too. A Sentinel makes a
 * node's link again at most once a ping period, and after a failover it
 * counts the new master's silence from the switch: with the default period,
 * as long as the short down-after here, the first PING to the master just
 * promoted could go out about when down-after ran out, so on a busy machine
 * the Sentinels found that healthy master down and failed it over again.
 */
const SENTINEL_CLOCKS = [
  'info-period',
  '500',
  'ping-period',
  '250',
  'publish-period',
  '250',
  'tilt-trigger',
  '5000',
  'tilt-period',
  '1000',
  'min-link-reconnect-period',
  '500',
];

export interface TestRedisSentinel {
  /** The master's name, as REDIS_SENTINEL_MASTER takes it. */
  name: string;
  /** `host:port,…` of the Sentinels, as REDIS_SENTINELS takes them. */
  sentinelSeeds: string;
  /** The data nodes (the first started as master). */
  nodes: RedisProcess[];
  sentinels: RedisProcess[];
  /** The data node the Sentinels name as master now. */
  master(): Promise<RedisProcess>;
  /** Resolves once the Sentinels name a live master other than `old` and it has `replicas` in sync. */
  waitForMasterOtherThan(old: RedisProcess, replicas: number, timeoutMs?: number): Promise<RedisProcess>;
  close(): Promise<void>;
}

export interface TestRedisSentinelOptions {
  replicas?: number;
  sentinels?: number;
  /** Sentinel down-after-milliseconds. */
  downAfterMs?: number;
}

export async function startTestRedisSentinel(options: TestRedisSentinelOptions = {}): Promise<TestRedisSentinel> {
  const { replicas = 2, sentinels: sentinelCount = 3, downAfterMs = 1_000 } = options;
  const name = 'vg-test-master';
  const scratch = scratchDirectory('sentinel');
  const nodes: RedisProcess[] = [];
  const sentinels: RedisProcess[] = [];
  const close = async () => {
    await Promise.all([...sentinels, ...nodes].map((process) => process.kill()));
    scratch.remove();
  };
  try {
    for (let index = 0; index <= replicas; index++) nodes.push(redisProcess(await freePort(), ['--dir', scratch.path]));
    const [first] = nodes as [RedisProcess];
    await first.start();
    await Promise.all(nodes.slice(1).map((node) => node.start(['--replicaof', '127.0.0.1', String(first.port)])));
    for (let index = 0; index < sentinelCount; index++) {
      const port = await freePort();
      const file = join(scratch.path, `sentinel-${port}.conf`);
      // Sentinel rewrites its file as it learns: one writable file each.
      writeFileSync(
        file,
        [
          `sentinel monitor ${name} 127.0.0.1 ${first.port} ${Math.floor(sentinelCount / 2) + 1}`,
          `sentinel down-after-milliseconds ${name} ${downAfterMs}`,
          `sentinel failover-timeout ${name} ${downAfterMs * 3}`,
          `sentinel parallel-syncs ${name} ${replicas}`,
          '',
        ].join('\n'),
      );
      sentinels.push(redisProcess(port, ['--sentinel', '--dir', scratch.path], file));
    }
    await Promise.all(sentinels.map((sentinel) => sentinel.start()));
    await Promise.all(sentinels.map((sentinel) => ask(sentinel.port, (client) => client.call('SENTINEL', 'DEBUG', ...SENTINEL_CLOCKS))));
  } catch (error) {
    await close();
    throw error;
  }

  const byPort = (port: number) => nodes.find((node) => node.port === port);
  async function named(): Promise<RedisProcess | undefined> {
    for (const sentinel of sentinels.filter((process) => process.running())) {
      const answer = (await ask(sentinel.port, (client) => client.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', name)).catch(() => null)) as
        [string, string] | null;
      if (answer) return byPort(Number(answer[1]));
    }
    return undefined;
  }
  /** Whether `node` is a live master with `count` replicas online and every Sentinel knows them. */
  async function serving(node: RedisProcess, count: number): Promise<boolean> {
    if (!node.running()) return false;
    const info = await ask(node.port, (client) => client.info('replication'));
    if (infoField(info, 'role') !== 'master' || Number(infoField(info, 'connected_slaves')) < count) return false;
    for (let index = 0; index < count; index++) if (!infoField(info, `slave${index}`)?.includes('state=online')) return false;
    for (const sentinel of sentinels.filter((process) => process.running())) {
      const master = (await ask(sentinel.port, (client) => client.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', name))) as
        [string, string] | null;
      if (Number(master?.[1]) !== node.port) return false;
      const known = (await ask(sentinel.port, (client) => client.call('SENTINEL', 'REPLICAS', name))) as unknown[];
      if (known.length < count) return false;
      // A failover needs the Sentinels to know each other (they meet on the master's hello channel).
      const peers = (await ask(sentinel.port, (client) => client.call('SENTINEL', 'SENTINELS', name))) as unknown[];
      if (peers.length < sentinels.length - 1) return false;
    }
    return true;
  }

  const group: TestRedisSentinel = {
    name,
    sentinelSeeds: sentinels.map((sentinel) => `127.0.0.1:${sentinel.port}`).join(','),
    nodes,
    sentinels,
    async master() {
      const node = await named();
      if (!node) throw new Error('no Sentinel names a master');
      return node;
    },
    async waitForMasterOtherThan(old, count, timeoutMs = 30_000) {
      let found: RedisProcess | undefined;
      const done = await waitForAsync(
        async () => {
          const node = await named();
          if (!node || node === old || !(await serving(node, count))) return false;
          found = node;
          return true;
        },
        timeoutMs,
        100,
      );
      if (!done || !found) throw new Error('the Sentinels named no new master in time');
      return found;
    },
    close,
  };
  try {
    if (!(await waitForAsync(() => serving(nodes[0]!, replicas), 30_000, 100))) throw new Error('the test Sentinel group did not come up');
  } catch (error) {
    await close();
    throw error;
  }
  return group;
}
