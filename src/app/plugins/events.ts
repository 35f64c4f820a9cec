import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { Config, HistoryConfig } from '../../config/index.js';
import type { EventBus } from '../../events/event-bus.js';
import { createMemoryEventTransport, type EventTransport } from '../../events/event-transport.js';
import type { TransactionUpdateEvent } from '../../events/normalize.js';
import { createHistoryFeed, type HistoryFeed } from '../../history/history-feed.js';
import type { HistoryStore } from '../../history/history-store.js';
import { createMemoryHistory } from '../../history/memory-history.js';
import type { Logger } from '../../logging/logger.js';
import { isTransientPostgresError, type Database } from '../../postgres/postgres-database.js';
import { createPostgresHistory, type PostgresHistory } from '../../postgres/postgres-history.js';
import { createRedisEventTransport } from '../../redis/redis-event-transport.js';
import { createRedisHistoryQueue } from '../../redis/redis-history-queue.js';
import { redisKeys } from '../../redis/redis-keys.js';

/*
 * The event log and bus, and the transaction history they feed, each
 * distinct event once:
 * - DATABASE_URL: the history is PostgreSQL's, shared. Without Redis the
 *   instance's own log feeds it (in process, retried while the database is
 *   away); with Redis, a queue the log's append script writes and every
 *   instance reads, so an event survives the instance that admitted it.
 * - otherwise it is in process: without Redis fed by the ring's append; with
 *   Redis each instance keeps its own, fed from the shared log in log order
 *   (every instance hears every event), so instances agree on events.
 */

declare module 'fastify' {
  interface FastifyInstance {
    bus: EventBus;
    /** The transaction history; undefined with HISTORY=off. */
    history: HistoryStore | undefined;
    /** What feeds the PostgreSQL history (DATABASE_URL): this instance's queue, or the Redis queue's reader; undefined otherwise. */
    historyFeed: HistoryFeed | undefined;
  }
}

/** An event the history cannot take is logged; it never stops the webhook that brought it. */
function feedHistory(apply: (event: TransactionUpdateEvent) => void, logger: Logger) {
  return (event: TransactionUpdateEvent) => {
    try {
      apply(event);
    } catch (error) {
      logger.error({ err: error, eventId: event.eventId }, 'an event could not be applied to the history');
    }
  };
}

export const eventsPlugin = fp<{ config: Config }>(
  async (app, { config }) => {
    const logger = app.log as Logger;
    const { redis, postgres } = app;
    const shared = postgres && config.history ? createPostgresHistory(postgres.pool, postgresHistoryOptions(config.history, config, logger)) : undefined;
    const inProcess = !shared && config.history ? createMemoryHistory(config.history) : undefined;
    const applyShared = postgres && shared && (async (events: readonly TransactionUpdateEvent[]) => {
      await postgres.migrated;
      await shared.applyAll(events);
    });
    const { retryMs, maxQueued, claimIdleMs } = config.postgresHistory;
    const feed = applyShared && !redis ? createHistoryFeed({ apply: applyShared, transient: isTransientPostgresError, logger, retryMs, maxQueued }) : undefined;
    const historyQueue = applyShared && redis ? redisKeys(config.redisPrefix).historyQueue : undefined;
    const applyInProcess = inProcess && feedHistory((event) => inProcess.apply!(event), logger);

    const events: EventTransport = redis
      ? createRedisEventTransport(redis, { ...config, logger, historyQueue })
      : createMemoryEventTransport(config.eventLogSize, config.eventLogMaxBytes, feed ? (event) => feed.push(event) : applyInProcess);
    const queue = applyShared && redis && historyQueue
      ? createRedisHistoryQueue(redis.commands, { key: historyQueue, apply: applyShared, transient: isTransientPostgresError, logger, pollMs: retryMs, claimIdleMs })
      : undefined;
    // Every instance hears every append, in log order: the queue's readers look at once; an in-process history takes it.
    if (queue) events.bus.onEvent(() => queue.wake());
    else if (redis && applyInProcess) events.bus.onEvent(applyInProcess);

    app.decorate<HistoryStore | undefined>('history', shared ?? inProcess);
    const historyFeed: HistoryFeed | undefined = feed ?? queue;
    app.decorate('historyFeed', historyFeed);
    app.decorate('bus', events.bus);
    app.readiness.add('events', () => events.bus.ready());
    if (postgres && shared) startShared(app, postgres, shared, historyFeed, retryMs, logger);
    if (!(await events.connect(5_000))) logger.warn('Redis is not reachable yet: not ready until it is');
    // The bus itself is closed by the drain, with the streams it feeds (subscriptions plugin).
    app.addHook('onClose', () => {
      inProcess?.close?.();
      return events.close();
    });
  },
  { name: 'events', dependencies: ['redis', 'postgres'] },
);

function startShared(app: FastifyInstance, postgres: Database, shared: PostgresHistory, feed: HistoryFeed | undefined, retryMs: number, logger: Logger): void {
  // Named, not required: without its database the instance still serves all but the history's fields.
  app.readiness.add('history', () => postgres.isMigrated() && postgres.answering(), { required: false });
  postgres.migrated.then(() => shared.start()).catch((error: unknown) => logger.warn({ err: error }, 'the history could not note its start'));
  // Before the database closes: the events read last are applied if it answers (bounded), the sweeps stop.
  app.addHook('onClose', async () => {
    await feed?.close(retryMs * 2);
    shared.close();
  });
}

function postgresHistoryOptions(history: HistoryConfig, config: Config, logger: Logger) {
  return {
    retentionMs: history.retentionMs,
    soldStatuses: history.soldStatuses,
    sweepEveryMs: config.postgresHistory.sweepMs,
    onSweepError: (error: unknown) => logger.warn({ err: error }, 'the history could not delete what is past retention; the next sweep tries again'),
  };
}
