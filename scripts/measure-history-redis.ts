import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:net';
import { createDemoData } from '../src/backends/memory/demo-data.js';
import type { TransactionUpdateEvent } from '../src/events/normalize.js';
import { createRedisClients } from '../src/redis/redis-clients.js';
import { createRedisEventLog } from '../src/redis/redis-event-log.js';
import { createRedisHistory } from '../src/redis/redis-history.js';

/*
 * `tsx scripts/measure-history-redis.ts [count]`: what the Redis history costs
 * (the S10 bench measures it too). On a redis-server of its own (so nothing else moves its
 * figures): bytes per stored transaction (MEMORY USAGE of its keys, and INFO
 * used_memory before and after), and the time of the append script with the
 * history step and without it (SLOWLOG, which records every command's own time
 * in Redis, and the publish as the caller waits for it, one at a time).
 */

const count = Number(process.argv[2] ?? 10_000);
const demo = createDemoData();
const products = demo.transactions.flatMap((t) => t.products).slice(0, 3);
const statuses = ['pending', 'completed', 'failed'];

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

function event(i: number, start: number): TransactionUpdateEvent {
  const transactionId = randomUUID();
  const status = statuses[i % statuses.length]!;
  const at = new Date(start + i * 360).toISOString(); // spread over the last hour
  const transaction = { transactionId, customerId: randomUUID(), status, products };
  return { eventId: `msg_${randomUUID()}`, type: 'transaction.update', format: 'ENVELOPED', receivedAt: at, occurredAt: at, transactionId, status, products, transaction, raw: {} };
}

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
const summary = (values: number[], unit: string) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mean = sorted.reduce((sum, v) => sum + v, 0) / sorted.length;
  return `mean ${mean.toFixed(1)} ${unit}, p50 ${quantile(sorted, 0.5).toFixed(1)}, p99 ${quantile(sorted, 0.99).toFixed(1)}, max ${sorted.at(-1)!.toFixed(1)}`;
};

async function main() {
  const port = await freePort();
  const server = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  try {
    await new Promise((resolve) => setTimeout(resolve, 300));
    const clients = createRedisClients(`redis://127.0.0.1:${port}`, { commandTimeoutMs: 5_000 });
    if (!(await clients.connected(5_000))) throw new Error('redis-server did not start');
    const { commands } = clients;
    const used = async () => Number(/used_memory:(\d+)/.exec(await commands.info('memory'))![1]);
    const history = createRedisHistory(commands, { prefix: 'with:', maxTransactions: 100_000, retentionMs: 7 * 86_400_000, soldStatuses: [] });
    const logs = {
      with: createRedisEventLog(clients, { prefix: 'with:', capacity: 1_000, afterAppend: history.appendStep }),
      without: createRedisEventLog(clients, { prefix: 'without:', capacity: 1_000 }),
    };
    const start = Date.now() - 3_600_000;
    const events = Array.from({ length: count }, (_, i) => event(i, start));
    // Scripts loaded and the stream at capacity first, so the figures are of the steady state.
    for (const log of Object.values(logs)) for (let i = 0; i < 1_000; i += 1) await log.append(event(i, start - 7_200_000), 'id');
    // Memory first, with nothing logged; then the time of each script, with every command logged.
    for (const [name, log] of Object.entries(logs)) {
      const before = await used();
      for (const e of events) await log.append({ ...e, eventId: `${name}-${e.eventId}` }, 'id');
      const after = await used();
      console.log(`${name} the history step: INFO used_memory +${after - before} bytes for ${count} transactions, ${((after - before) / count).toFixed(0)} each (the event log's own keys included)`);
    }
    await commands.config('SET', 'slowlog-log-slower-than', '0');
    // Commands a script runs are logged too (Redis 7.0), so the log must hold some 100 per publish.
    await commands.config('SET', 'slowlog-max-len', String(count * 100));
    for (const [name, log] of Object.entries(logs)) {
      await commands.slowlog('RESET');
      const waits: number[] = [];
      for (const e of events) {
        const from = process.hrtime.bigint();
        await log.append({ ...e, transactionId: `again-${e.transactionId}`, eventId: `${name}-again-${e.eventId}` }, 'id');
        waits.push(Number(process.hrtime.bigint() - from) / 1e3);
      }
      const runs = ((await commands.slowlog('GET', count * 100)) as Array<[number, number, number, string[]]>)
        .filter(([, , , argv]) => ['eval', 'evalsha'].includes(argv[0]?.toLowerCase() ?? ''))
        .map(([, , micros]) => micros);
      await commands.slowlog('RESET');
      console.log(`${name} the history step, ${count} publishes one at a time:`);
      console.log(`  the script in Redis (SLOWLOG, ${runs.length} runs): ${summary(runs, 'µs')}`);
      console.log(`  the publish as its caller waits: ${summary(waits, 'µs')}`);
    }
    // A page of 50 as GraphQL asks for it (recentTransactions(first: 50)), one at a time.
    for (const statuses of [[], ['completed'], ['pending', 'failed']]) {
      await commands.slowlog('RESET');
      const waits: number[] = [];
      for (let i = 0; i < 1_000; i += 1) {
        const from = process.hrtime.bigint();
        await history.recent({ first: 50, after: undefined, statuses, since: 0, until: Number.MAX_SAFE_INTEGER });
        waits.push(Number(process.hrtime.bigint() - from) / 1e3);
      }
      const runs = ((await commands.slowlog('GET', 100_000)) as Array<[number, number, number, string[]]>)
        .filter(([, , , argv]) => ['eval', 'evalsha'].includes(argv[0]?.toLowerCase() ?? ''))
        .map(([, , micros]) => micros);
      console.log(`recent(first: 50${statuses.length ? `, statuses ${statuses.join(' ')}` : ''}), 1 000 one at a time:`);
      console.log(`  the script in Redis: ${summary(runs, 'µs')}`);
      console.log(`  the call as its caller waits (records parsed): ${summary(waits, 'µs')}`);
    }
    await commands.config('SET', 'slowlog-log-slower-than', '10000');
    // MEMORY USAGE of every key the history holds.
    const byKind = new Map<string, { keys: number; bytes: number }>();
    for await (const keys of commands.scanStream({ match: 'with:history:*', count: 1_000 })) {
      for (const key of keys as string[]) {
        const kind = key.slice('with:history:'.length).replace(/^r:.*/, 'r:<id>').replace(/^([mhd])-?\d+$/, '$1<start>').replace(/^s:.*/, 's:<status>');
        const entry = byKind.get(kind) ?? { keys: 0, bytes: 0 };
        entry.keys += 1;
        entry.bytes += Number(await commands.memory('USAGE', key, 'SAMPLES', '0'));
        byKind.set(kind, entry);
      }
    }
    const records = byKind.get('r:<id>')!.keys;
    let total = 0;
    console.log(`MEMORY USAGE of the history's keys (${records} records):`);
    for (const [kind, { keys, bytes }] of [...byKind].sort((a, b) => b[1].bytes - a[1].bytes)) {
      total += bytes;
      console.log(`  ${kind.padEnd(12)} ${String(keys).padStart(6)} keys ${String(bytes).padStart(10)} bytes  ${(bytes / records).toFixed(0).padStart(6)} per transaction`);
    }
    console.log(`  total ${total} bytes, ${(total / records).toFixed(0)} per transaction`);
    const sample = (await commands.hgetall(`with:history:r:${events[0]!.transactionId}`)) as Record<string, string>;
    console.log(`one record's fields: ${Object.entries(sample).map(([field, value]) => `${field} ${value.length}`).join(', ')} (bytes)`);
    await Promise.all(Object.values(logs).map((log) => log.close()));
    await clients.close();
  } finally {
    server.kill('SIGKILL');
  }
}

await main();
