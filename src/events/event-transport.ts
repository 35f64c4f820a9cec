import type { Logger } from '../logging.js';
import { createEventBus, type EventBus } from './event-bus.js';
import { createMemoryEventLog } from './event-log.js';
import type { RedisClients } from '../redis/redis-clients.js';
import { createRedisEventLog } from './redis/redis-event-log.js';

/** The event bus, in process or shared through Redis (DESIGN §5). */
export interface EventTransport {
  bus: EventBus;
  /** Waits (bounded) for the shared store, so an instance starts ready when it can. */
  connect(timeoutMs: number): Promise<boolean>;
  close(): Promise<void>;
}

export interface EventTransportOptions {
  /** Shares events and dedupe through this Redis; in process without it. */
  redis: RedisClients | undefined;
  redisPrefix: string;
  eventLogSize: number;
  logger: Logger;
}

export function createEventTransport(options: EventTransportOptions): EventTransport {
  const clients = options.redis;
  if (!clients) {
    const bus = createEventBus({ log: createMemoryEventLog({ capacity: options.eventLogSize }) });
    return { bus, connect: async () => true, close: () => bus.close() };
  }
  let tailFailing = false;
  const log = createRedisEventLog(clients, {
    prefix: options.redisPrefix,
    capacity: options.eventLogSize,
    onTailError(error) {
      // Once per outage, not once per retry.
      if (!tailFailing) options.logger.warn({ err: error }, 'Redis live events interrupted; retrying');
      tailFailing = true;
    },
  });
  clients.commands.on('ready', () => {
    if (tailFailing) options.logger.info('Redis is back');
    tailFailing = false;
  });
  const bus = createEventBus({ log });
  return {
    bus,
    // Ready once commands work and live events flow: an event appended before then would reach no subscriber here.
    async connect(timeoutMs) {
      const timedOut = new Promise<false>((resolve) => setTimeout(resolve, timeoutMs, false).unref());
      return (await clients.connected(timeoutMs)) && (await Promise.race([log.whenLive().then(() => true), timedOut]));
    },
    close: () => bus.close(),
  };
}
