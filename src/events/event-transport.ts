import { createEventBus, type EventBus } from './event-bus.js';
import { createMemoryEventLog, type LogKeep, type MemoryEventLogOptions } from './event-log.js';

/** The event bus with what starts and stops it: in process here, shared through Redis in redis/. */
export interface EventTransport {
  bus: EventBus;
  /** Waits (bounded) for the shared store, so an instance starts ready when it can. */
  connect(timeoutMs: number): Promise<boolean>;
  close(): Promise<void>;
}

/** The configuration's say on the in-process log. */
export interface MemoryEventLogConfig {
  eventLogSize: number;
  eventLogMaxBytes: number;
  eventLogKeep: LogKeep;
  replay: { pageEvents: number; pagesAtOnce: number };
}

/**
 * One instance's events: an in-process log of at most `eventLogSize` events and `eventLogMaxBytes` of them, keeping what `eventLogKeep`
 * says; `kept`: where the log hands each event to be kept (the history, or PostgreSQL) and reads what it no longer holds.
 */
export function createMemoryEventTransport(
  config: MemoryEventLogConfig,
  kept: Pick<MemoryEventLogOptions, 'onAdmitted' | 'epoch' | 'storedReplay' | 'storedAccountNewest'> = {},
): EventTransport {
  const log = createMemoryEventLog({
    capacity: config.eventLogSize,
    maxBytes: config.eventLogMaxBytes,
    keep: config.eventLogKeep,
    pageEvents: config.replay.pageEvents,
    ...kept,
  });
  const bus = createEventBus({ log, pagesAtOnce: config.replay.pagesAtOnce });
  return { bus, connect: async () => true, close: () => bus.close() };
}
