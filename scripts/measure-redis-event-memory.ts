import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { parseWebhookText } from '../src/events/normalize.js';
import { buildWebhookRequest } from '../src/events/webhook-request.js';
import { createRedisClients } from '../src/redis/redis-clients.js';
import { createRedisEventLog } from '../src/redis/redis-event-log.js';
import { redisKeys } from '../src/redis/redis-keys.js';

/*
 * `tsx scripts/measure-redis-event-memory.ts <redis url> [events]`: what one event costs in Redis
 * (INFO memory's used_memory before and after appending `events`, default 10000, divided by
 * their number), for a log that keeps them all (EVENT_LOG_SIZE as large) while a PostgreSQL
 * history has not read them yet (the worst case: nothing acknowledged, nothing trimmed), and
 * the MEMORY USAGE of each key one event leaves. Events are enveloped webhooks with two product
 * lines (about 450 bytes of JSON). Use a Redis of its own: it flushes nothing but reads the
 * whole server's memory.
 */

const url = process.argv[2];
const count = Number(process.argv[3] ?? 10_000);
if (!url) throw new Error('usage: tsx scripts/measure-redis-event-memory.ts <redis url> [events]');

function webhookEvent(n: number) {
  const transaction = {
    transactionId: `tx-${n % 2_000}`,
    status: n % 3 === 0 ? 'completed' : 'pending',
    products: [
      { productId: `p-${n % 97}`, productName: 'Sparkling water 0.5 l', productPrice: 1.5, quantity: 1 },
      { productId: `p-${n % 89}`, productName: 'Chocolate bar', productPrice: 2.25, quantity: 2 },
    ],
  };
  const request = buildWebhookRequest({ form: 'enveloped', id: `msg_${randomUUID()}`, transaction });
  const parsed = parseWebhookText(request.body, {
    receivedAt: new Date().toISOString(),
    webhookId: undefined,
    madeId: `gw_${randomUUID()}`,
  });
  if (!parsed.ok) throw new Error('unreadable webhook');
  return parsed.event;
}

const inspect = new Redis(url);
const used = async () => Number(/used_memory:(\d+)/.exec(await inspect.info('memory'))?.[1]);
const prefix = `measure-${randomUUID().slice(0, 8)}:`;
const clients = createRedisClients({ kind: 'standalone', url }, { commandTimeoutMs: 5_000, probeKey: redisKeys(prefix).writeProbe });
const log = createRedisEventLog(clients, { prefix, capacity: count, pageEvents: 200, historyGroup: 'history', replicaWaitMs: 500 });
await log.whenLive();
const first = webhookEvent(0);
const before = await used();
for (let n = 0; n < count; n++) await log.append(n === 0 ? first : webhookEvent(n), 'id');
const after = await used();
const keys = (await inspect.keys(`${prefix}*`)).sort();
console.log(`events: ${count}, JSON of one: ${JSON.stringify(first).length} bytes`);
console.log(`used_memory per event: ${Math.round((after - before) / count)} bytes`);
console.log(`keys: ${keys.length} (${(keys.length / count).toFixed(2)} per event)`);
for (const kind of ['dedupe', 'event-position', 'last-digest']) {
  const one = keys.find((key) => key.includes(`:${kind}:`));
  if (one) console.log(`MEMORY USAGE ${kind}: ${await inspect.memory('USAGE', one)} bytes`);
}
for (const key of keys.filter((key) => !/:(dedupe|event-position|last-digest):/.test(key))) {
  console.log(
    `MEMORY USAGE ${key.slice(prefix.length)}: ` +
      `${Math.round(Number(await inspect.memory('USAGE', key, 'SAMPLES', 0)) / count)} bytes per event`,
  );
}
await inspect.del(...keys);
await log.close();
await clients.close();
inspect.disconnect();
