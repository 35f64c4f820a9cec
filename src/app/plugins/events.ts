import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { ConfigError, type Config, type HistoryConfig } from '../../config/config.js';
import type { EventBus } from '../../events/event-bus.js';
import { createMemoryEventTransport, type EventTransport } from '../../events/event-transport.js';
import type { TransactionUpdateEvent } from '../../events/normalize.js';
import { createHistoryFeed, type HistoryFeed } from '../../history/history-feed.js';
import type { HistoryStore } from '../../history/history-store.js';
import { createMemoryHistory } from '../../history/memory-history.js';
import type { Logger } from '../../logging/logger.js';
import { isTransientPostgresError, type Database } from '../../postgres/postgres-database.js';
import { createPostgresHistory, type PostgresHistory } from '../../postgres/postgres-history.js';
import { createPostgresEventLog, STORED_EPOCH } from '../../postgres/postgres-event-log.js';
import { createRedisEventTransport } from '../../redis/redis-event-transport.js';
import { evictionOf } from '../../redis/eviction-policy.js';
import { createRedisHistoryReader, HISTORY_GROUP, type RedisHistoryReaderOptions } from '../../redis/redis-history-reader.js';
import { redisKeys } from '../../redis/redis-keys.js';
import type { Redis, Cluster } from 'ioredis';
import { DEMO_HOUR_MS, seedsDemoHour, type GatewayDeps } from '../gateway-deps.js';

/*
 * The event log and bus, and the transaction history they feed, each
 * distinct event once:
 * - DATABASE_URL: the history is PostgreSQL's, shared. Without Redis it is
 *   where events are kept: the instance's log publishes an event only once
 *   its commit succeeded, and the webhook's 200 waits for it (history-feed.ts);
 *   the commit writes it to an event log in PostgreSQL too, which the ring
 *   reads for what it does not hold (a resume from before a restart).
 *   With Redis, the log's own stream feeds it, which every instance reads
 *   through one consumer group and which is never trimmed past what that
 *   group has not applied, so an event survives the instance that admitted it.
 * - otherwise it is in process: without Redis fed by the ring's append; with
 *   Redis each instance keeps its own, fed from the shared log in log order
 *   (every instance hears every event), so instances agree on events.
 */

declare module 'fastify' {
  interface FastifyInstance {
    bus: EventBus;
    /**
     * The machines' changes (`vendingUpdated`): a log and bus of their own, of the same kind as the transactions'
     * (events/vending-events.ts).
     */
    vendingBus: EventBus;
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

export const eventsPlugin = fp<{ config: Config; deps: GatewayDeps }>(
  async (app, { config, deps }) => {
    const logger = app.log as Logger;
    const { redis, postgres } = app;
    const shared =
      postgres && config.history ? createPostgresHistory(postgres.pool, postgresHistoryOptions(config.history, config, logger)) : undefined;
    // The demo's hour of dated sales (backend.ts) is all there was before: the history covers that hour too.
    const inProcess =
      !shared && config.history
        ? createMemoryHistory({ ...config.history, ...(seedsDemoHour(config, deps) ? { coveredFrom: Date.now() - DEMO_HOUR_MS } : {}) })
        : undefined;
    // Without Redis, PostgreSQL keeps the events too: its own event log, written in the commits that apply them.
    const storedLog =
      postgres && shared && !redis
        ? createPostgresEventLog(postgres.pool, {
            capacity: config.eventLogSize,
            pageEvents: config.replay.pageEvents,
            trimEveryMs: config.postgresHistory.sweepMs,
            onTrimError: (error) =>
              logger.warn({ err: error }, 'the event log in PostgreSQL could not be trimmed; the next trim tries again'),
          })
        : undefined;
    const applyShared =
      postgres &&
      shared &&
      (async (events: readonly TransactionUpdateEvent[]) => {
        await postgres.migrated;
        return shared.applyAll(events, storedLog?.write);
      });
    const { retryMs, maxQueued, claimIdleMs } = config.postgresHistory;
    const feed =
      applyShared && !redis
        ? createHistoryFeed({ apply: applyShared, transient: isTransientPostgresError, logger, retryMs, maxQueued })
        : undefined;
    const historyGroup = applyShared && redis ? HISTORY_GROUP : undefined;
    const applyInProcess = inProcess && feedHistory((event) => inProcess.apply(event), logger);

    const events: EventTransport = redis
      ? createRedisEventTransport(redis, { ...config, logger, historyGroup })
      : createMemoryEventTransport(
          config,
          feed && storedLog
            ? {
                onAdmitted: (event) => feed.push(event),
                epoch: STORED_EPOCH,
                storedReplay: async (cursor, account) => {
                  // Read again later, as when the database does not answer.
                  if (!postgres?.isMigrated()) throw new Error('the event log in PostgreSQL cannot be read before its migrations ran');
                  return storedLog.readAfter(cursor, account);
                },
                storedAccountNewest: async (account) => {
                  if (!postgres?.isMigrated()) throw new Error('the event log in PostgreSQL cannot be read before its migrations ran');
                  return storedLog.accountNewest(account);
                },
              }
            : { onAdmitted: applyInProcess },
        );
    const readerOptions = applyShared && {
      apply: applyShared,
      transient: isTransientPostgresError,
      logger,
      pollMs: retryMs,
      claimIdleMs,
      maxBehind: maxQueued,
    };
    const queue =
      redis && readerOptions
        ? createRedisHistoryReader(redis.commands, { ...readerOptions, key: redisKeys(config.redisPrefix).stream })
        : undefined;
    if (redis && readerOptions) drainEarlierQueue(redis.commands, redisKeys(config.redisPrefix).historyQueue, readerOptions, app);
    // Every instance hears every append, in log order: the queue's readers look at once; an in-process history takes it.
    if (queue) events.bus.onEvent(() => queue.wake());
    else if (redis && applyInProcess) events.bus.onEvent(applyInProcess);

    app.decorate<HistoryStore | undefined>('history', shared ?? inProcess);
    const historyFeed: HistoryFeed | undefined = feed ?? queue;
    app.decorate('historyFeed', historyFeed);
    app.decorate('bus', events.bus);
    // The machines' own log, beside the transactions': it feeds no history, and its keys in Redis live under a prefix of their own.
    const vendingEvents: EventTransport = redis
      ? createRedisEventTransport(redis, { ...config, redisPrefix: redisKeys(config.redisPrefix).vendingLogPrefix, logger })
      : createMemoryEventTransport(config);
    app.decorate('vendingBus', vendingEvents.bus);
    app.readiness.add('events', () => events.bus.ready());
    if (postgres && shared) startShared(app, postgres, shared, historyFeed, retryMs, logger);
    await vendingEvents.connect(5_000);
    if (!(await events.connect(5_000)))
      logger.warn({ reason: redis?.problem() ?? 'no answer yet' }, "Redis cannot take the event log's writes yet: not ready until it can");
    else if (redis && config.redis) await refuseEvictingRedis(redis.appends, REDIS_VARIABLE[config.redis.kind], logger);
    // The bus itself is closed by the drain, with the streams it feeds (subscriptions plugin).
    app.addHook('onClose', async () => {
      inProcess?.close?.();
      storedLog?.close();
      await vendingEvents.close();
      await events.close();
    });
  },
  { name: 'events', dependencies: ['redis', 'postgres'] },
);

/**
 * A Redis that evicts keys when full would silently forget what dedupe and resume need (eviction-policy.ts): the gateway does not start on
 * one.
 */
/** The variable that names each kind of Redis, for a line that says which one to fix. */
const REDIS_VARIABLE = { standalone: 'REDIS_URL', cluster: 'REDIS_CLUSTER_NODES', sentinel: 'REDIS_SENTINELS' } as const;

async function refuseEvictingRedis(commands: Redis, variable: string, logger: Logger): Promise<void> {
  const eviction = await evictionOf(commands);
  if ('unknown' in eviction)
    logger.warn(
      { reason: eviction.unknown },
      'the Redis eviction policy cannot be read (CONFIG GET refused, as managed services may): make sure it is noeviction, or dedupe ' +
        'and resume may forget events when Redis is full',
    );
  else if (eviction.evicts) {
    const got = `maxmemory ${eviction.maxmemory}, maxmemory-policy ${eviction.policy}`;
    throw new ConfigError(
      variable,
      'a Redis that never evicts keys (maxmemory-policy noeviction, or maxmemory 0)',
      undefined,
      `it has ${got}, so webhook dedupe and resume would silently forget events`,
    );
  }
}

/**
 * An earlier version copied each event into a queue of the history's own: what it still holds
 * (the database was behind at the upgrade) is applied, then the queue is deleted.
 */
function drainEarlierQueue(
  commands: Redis | Cluster,
  key: string,
  options: Omit<RedisHistoryReaderOptions, 'key'>,
  app: FastifyInstance,
): void {
  let reader: HistoryFeed | undefined;
  commands
    .exists(key)
    .then((found) => {
      if (found > 0) reader = createRedisHistoryReader(commands, { ...options, key, drain: true });
    })
    .catch(() => {
      // Redis away at start: the next start looks again.
    });
  app.addHook('onClose', async () => reader?.close(options.pollMs * 2));
}

function startShared(
  app: FastifyInstance,
  postgres: Database,
  shared: PostgresHistory,
  feed: HistoryFeed | undefined,
  retryMs: number,
  logger: Logger,
): void {
  // Named, not required: without its database the instance still serves all but the history's fields.
  // Its readiness gauge is the metric that says whether events reach the history.
  const fed = () => postgres.isMigrated() && postgres.answering() && (feed?.feeding() ?? true);
  app.readiness.add('history', fed, { required: false });
  postgres.migrated
    .then(() => shared.start())
    .catch((error: unknown) => logger.warn({ err: error }, 'the history could not note its start'));
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
    defaultCurrency: history.defaultCurrency,
    sweepEveryMs: config.postgresHistory.sweepMs,
    onSweepError: (error: unknown) =>
      logger.warn({ err: error }, 'the history could not delete what is past retention; the next sweep tries again'),
  };
}
