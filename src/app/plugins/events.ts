import fp from 'fastify-plugin';
import type { Config } from '../../config/index.js';
import type { EventBus } from '../../events/event-bus.js';
import { createMemoryEventTransport, type EventTransport } from '../../events/event-transport.js';
import type { TransactionUpdateEvent } from '../../events/normalize.js';
import { createMemoryHistory } from '../../history/memory-history.js';
import type { HistoryStore } from '../../history/history-store.js';
import type { Logger } from '../../logging/logger.js';
import { createRedisEventTransport } from '../../redis/redis-event-transport.js';
import { createRedisHistory } from '../../redis/redis-history.js';

/*
 * The event log and bus, and the transaction history they feed. The history
 * is fed where the event log admits an event, so each distinct event once,
 * whichever instance received it: in process by the ring's append, with
 * Redis inside the log's own append script.
 */

declare module 'fastify' {
  interface FastifyInstance {
    bus: EventBus;
    /** The transaction history; undefined with HISTORY=off. */
    history: HistoryStore | undefined;
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
    const { redis } = app;
    const redisHistory = redis && config.history ? createRedisHistory(redis.commands, { ...config.history, prefix: config.redisPrefix }) : undefined;
    const history: HistoryStore | undefined = redisHistory ?? (config.history && createMemoryHistory(config.history));
    const events: EventTransport = redis
      ? createRedisEventTransport(redis, { ...config, logger, afterAppend: redisHistory?.appendStep })
      : createMemoryEventTransport(config.eventLogSize, config.eventLogMaxBytes, history?.apply && feedHistory(history.apply, logger));
    app.decorate('history', history);
    app.decorate('bus', events.bus);
    app.readiness.add('events', () => events.bus.ready());
    if (!(await events.connect(5_000))) logger.warn('Redis is not reachable yet: not ready until it is');
    // The bus itself is closed by the drain, with the streams it feeds (subscriptions plugin).
    app.addHook('onClose', () => { history?.close?.(); return events.close(); });
  },
  { name: 'events', dependencies: ['redis'] },
);
