import { createEventBus } from '../events/event-bus.js';
import type { LogKeep } from '../events/event-log.js';
import type { EventTransport } from '../events/event-transport.js';
import type { Logger } from '../logging/logger.js';
import type { RedisClients } from './redis-clients.js';
import { createRedisEventLog } from './redis-event-log.js';
import { redisProblem } from './redis-problem.js';

export interface RedisEventTransportOptions {
  redisPrefix: string;
  eventLogSize: number;
  eventLogKeep: LogKeep;
  /** Events in one page of a replay, and pages read at once by this instance. */
  replay: { pageEvents: number; pagesAtOnce: number };
  logger: Logger;
  /** The history's consumer group on the log, when the history is kept elsewhere (redis-event-log.ts). */
  historyGroup?: string | undefined;
  /** Longest wait for a replica to hold an appended event (replica-wait.ts). */
  redisReplicaWaitMs: number;
}

/** Events shared by every instance of a deployment through one Redis (redis-event-log.ts). */
export function createRedisEventTransport(clients: RedisClients, options: RedisEventTransportOptions): EventTransport {
  let tailFailing = false;
  const log = createRedisEventLog(clients, {
    prefix: options.redisPrefix,
    capacity: options.eventLogSize,
    keep: options.eventLogKeep,
    pageEvents: options.replay.pageEvents,
    historyGroup: options.historyGroup,
    replicaWaitMs: options.redisReplicaWaitMs,
    onTailError(error) {
      // Once per outage, not once per retry.
      if (!tailFailing) options.logger.warn({ reason: redisProblem(error) }, 'Redis live events interrupted; retrying');
      tailFailing = true;
    },
  });
  // redis-clients.ts says when Redis answers again.
  clients.commands.on('ready', () => (tailFailing = false));
  // Every append tells the clients whether the log's slot took it (readiness follows: redis-clients.ts).
  const bus = createEventBus({
    log: {
      ...log,
      async append(event, dedupeBy) {
        try {
          const appended = await log.append(event, dedupeBy);
          clients.noteWrite(true);
          return appended;
        } catch (error) {
          clients.noteWrite({ error });
          // The webhook's 503 is logged with this: what it means, not the client library's words.
          throw new Error(redisProblem(error), { cause: error });
        }
      },
      ready: () => clients.writable(),
    },
    pagesAtOnce: options.replay.pagesAtOnce,
  });
  return {
    bus,
    // Ready once the log can be written and live events flow: an event appended before then would reach no subscriber here.
    async connect(timeoutMs) {
      const timedOut = new Promise<false>((resolve) => setTimeout(resolve, timeoutMs, false).unref());
      return (await clients.connected(timeoutMs)) && (await Promise.race([log.whenLive().then(() => true), timedOut]));
    },
    close: () => bus.close(),
  };
}
