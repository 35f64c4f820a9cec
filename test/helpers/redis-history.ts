import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { EventLog } from '../../src/events/event-log.js';
import type { TransactionUpdateEvent } from '../../src/events/normalize.js';
import type { HistoryOptions, HistoryStore } from '../../src/history/history-store.js';
import { createRedisClients, type RedisClients } from '../../src/redis/redis-clients.js';
import { createRedisEventLog } from '../../src/redis/redis-event-log.js';
import { createRedisHistory } from '../../src/redis/redis-history.js';

/*
 * The Redis history as an instance runs it: a store, and an event log that
 * applies every event it admits through the store's append step. Each
 * deployment has a key prefix of its own (tests run in parallel on one Redis),
 * and its keys are deleted when it closes.
 */

export const testRedisUrl = (): string => process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

export interface HistoryInstance {
  history: HistoryStore;
  log: EventLog;
  /** Publishes as the webhook route does; resolves whether the log admitted the event. */
  publish(event: TransactionUpdateEvent): Promise<boolean>;
}

export interface HistoryDeployment {
  prefix: string;
  commands: Redis;
  /**
   * An instance of the deployment (its own connections). `logPrefix` (under
   * `prefix`) gives its event log keys of its own, so the history's own check
   * is what stands between an event and a second apply.
   */
  instance(options: HistoryOptions, logPrefix?: string): Promise<HistoryInstance>;
  close(): Promise<void>;
}

export async function historyDeployment(): Promise<HistoryDeployment> {
  const prefix = `test-${randomUUID()}:`;
  const opened: RedisClients[] = [];
  const logs: EventLog[] = [];
  const open = async () => {
    const clients = createRedisClients(testRedisUrl(), { commandTimeoutMs: 5_000 });
    opened.push(clients);
    if (!(await clients.connected(5_000))) throw new Error(`no Redis answering at ${testRedisUrl()}`);
    return clients;
  };
  const admin = await open();
  return {
    prefix,
    commands: admin.commands,
    async instance(options, logPrefix = prefix) {
      const clients = await open();
      const history = createRedisHistory(clients.commands, { ...options, prefix });
      const log = createRedisEventLog(clients, { prefix: logPrefix, capacity: 10_000, afterAppend: history.appendStep });
      logs.push(log);
      return { history, log, publish: async (event) => (await log.append(event, 'id')) !== undefined };
    },
    async close() {
      await Promise.all(logs.map((log) => log.close()));
      for await (const keys of admin.commands.scanStream({ match: `${prefix}*`, count: 1_000 })) {
        if ((keys as string[]).length > 0) await admin.commands.unlink(...(keys as string[]));
      }
      await Promise.all(opened.map((clients) => clients.close()));
    },
  };
}
