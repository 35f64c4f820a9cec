import fp from 'fastify-plugin';
import type { Config, HistoryConfig } from '../../config/index.js';
import type { EventBus } from '../../events/event-bus.js';
import { createMemoryEventTransport, type EventTransport } from '../../events/event-transport.js';
import type { TransactionUpdateEvent } from '../../events/normalize.js';
import { createMemoryHistory } from '../../history/memory-history.js';
import { createHistoryFeed, type HistoryFeed } from '../../history/history-feed.js';
import type { HistoryStore } from '../../history/history-store.js';
import type { Logger } from '../../logging/logger.js';
import { isTransientPostgresError } from '../../postgres/postgres-database.js';
import { createPostgresHistory, type PostgresHistoryOptions } from '../../postgres/postgres-history.js';
import { createRedisEventTransport } from '../../redis/redis-event-transport.js';
import { createRedisHistoryQueue } from '../../redis/redis-history-queue.js';
import { createRedisHistory } from '../../redis/redis-history.js';

/*
 * The event log and bus, and the transaction history they feed. The history
 * is fed where the event log admits an event, so each distinct event once,
 * whichever instance received it: in process by the ring's append, with
 * Redis inside the log's own append script, with PostgreSQL (DATABASE_URL)
 * by the instance whose log admitted it, through a feed that waits while the
 * database is away.
 */

declare module 'fastify' {
  interface FastifyInstance {
    bus: EventBus;
    /** The transaction history; undefined with HISTORY=off. */
    history: HistoryStore | undefined;
    /** What feeds the PostgreSQL history from this instance's log (DATABASE_URL); undefined otherwise. */
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
    // With DATABASE_URL the history is PostgreSQL's, whatever REDIS_URL says; fed by the instance whose log admitted the event.
    const postgresHistory = postgres && config.history ? createPostgresHistory(postgres.pool, postgresHistoryOptions(config.history, config.postgresHistory, logger)) : undefined;
    const applyToPostgres = postgres && postgresHistory && (async (event: TransactionUpdateEvent) => {
      await postgres.migrated;
      await postgresHistory.apply(event);
    });
    const { retryMs, maxQueued, claimIdleMs } = config.postgresHistory;
    // Without Redis the instance's own log feeds it (in process); with Redis a queue every instance reads, written by the append script.
    const feed = applyToPostgres && !redis ? createHistoryFeed({ apply: applyToPostgres, transient: isTransientPostgresError, logger, retryMs, maxQueued }) : undefined;
    const historyQueue = applyToPostgres && redis ? `${config.redisPrefix}history-queue` : undefined;
    const redisHistory = !postgresHistory && redis && config.history ? createRedisHistory(redis.commands, { ...config.history, prefix: config.redisPrefix }) : undefined;
    const history: HistoryStore | undefined = postgresHistory ?? redisHistory ?? (config.history && createMemoryHistory(config.history));
    // The in-process store applies at once (its apply returns nothing to wait for).
    const onAdmitted = feed ? (event: TransactionUpdateEvent) => feed.push(event) : history?.apply && feedHistory(history.apply as (event: TransactionUpdateEvent) => void, logger);
    const events: EventTransport = redis
      ? createRedisEventTransport(redis, { ...config, logger, afterAppend: redisHistory?.appendStep, historyQueue })
      : createMemoryEventTransport(config.eventLogSize, config.eventLogMaxBytes, onAdmitted);
    const queue = applyToPostgres && redis && historyQueue
      ? createRedisHistoryQueue(redis.commands, { key: historyQueue, apply: applyToPostgres, transient: isTransientPostgresError, logger, pollMs: retryMs, claimIdleMs })
      : undefined;
    // Every instance hears every append: whichever reads the queue first applies it.
    if (queue) events.bus.onEvent(() => queue.wake());
    app.decorate('history', history);
    app.decorate<HistoryFeed | undefined>('historyFeed', feed ?? queue);
    app.decorate('bus', events.bus);
    app.readiness.add('events', () => events.bus.ready());
    if (postgres && postgresHistory) {
      app.readiness.add('history', () => postgres.isMigrated() && postgres.answering());
      postgres.migrated.then(() => postgresHistory.start()).catch((error: unknown) => logger.warn({ err: error }, 'the history could not note its start'));
      // Before the database closes: the events read last are applied if it answers (bounded), the sweeps stop.
      app.addHook('onClose', async () => {
        await (feed ?? queue)?.close(retryMs * 2);
        postgresHistory.close();
      });
    }
    if (!(await events.connect(5_000))) logger.warn('Redis is not reachable yet: not ready until it is');
    // The bus itself is closed by the drain, with the streams it feeds (subscriptions plugin).
    app.addHook('onClose', () => events.close());
  },
  { name: 'events', dependencies: ['redis', 'postgres'] },
);

function postgresHistoryOptions(history: HistoryConfig, fixed: Config['postgresHistory'], logger: Logger): PostgresHistoryOptions {
  return {
    retentionMs: history.retentionMs,
    soldStatuses: history.soldStatuses,
    sweepEveryMs: fixed.sweepMs,
    onSweepError: (error) => logger.warn({ err: error }, 'the history could not delete what is past retention; the next sweep tries again'),
  };
}
