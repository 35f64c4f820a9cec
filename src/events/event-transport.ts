import { createEventBus, type EventBus } from './event-bus.js';
import { createMemoryEventLog, type MemoryEventLogOptions } from './event-log.js';

/** The event bus with what starts and stops it: in process here, shared through Redis in redis/. */
export interface EventTransport {
  bus: EventBus;
  /** Waits (bounded) for the shared store, so an instance starts ready when it can. */
  connect(timeoutMs: number): Promise<boolean>;
  close(): Promise<void>;
}

/** One instance's events: an in-process log of the last `eventLogSize` events, at most `eventLogMaxBytes` of them. */
export function createMemoryEventTransport(eventLogSize: number, eventLogMaxBytes: number, onAdmitted?: MemoryEventLogOptions['onAdmitted']): EventTransport {
  const bus = createEventBus({ log: createMemoryEventLog({ capacity: eventLogSize, maxBytes: eventLogMaxBytes, onAdmitted }) });
  return { bus, connect: async () => true, close: () => bus.close() };
}
