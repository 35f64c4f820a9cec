import { GraphQLError } from 'graphql';
import type { TransactionUpdateEvent } from './normalize.js';

/*
 * The bounded log of published events: it both fans events out (every
 * instance tails it) and lets a subscriber that lost its connection replay
 * what it missed. In process it is a ring buffer; with Redis, a capped stream.
 */

/** An event and its place in the log; positions only grow. */
export interface LoggedEvent {
  position: string;
  event: TransactionUpdateEvent;
}

export interface EventLog {
  /** Appends an event; it reaches every `onAppend` listener (on every instance) afterwards. */
  append(event: TransactionUpdateEvent): Promise<LoggedEvent>;
  /**
   * The events after the one with `eventId`, oldest first. Throws
   * `EVENTS_EXPIRED` when that event is no longer (or never was) in the log.
   */
  readAfter(eventId: string): Promise<LoggedEvent[]>;
  /** Calls `listener` with every event appended from now on, in log order. */
  onAppend(listener: (logged: LoggedEvent) => void): () => void;
  /** Orders two positions of this log. */
  compare(a: string, b: string): number;
  /** Whether appends can succeed now. */
  ready(): boolean;
  close(): Promise<void>;
}

/** `after` named an event the log no longer reaches: the client must start afresh. */
export function eventsExpired(eventId: string): GraphQLError {
  return new GraphQLError(
    `Event ${JSON.stringify(eventId)} is older than the event log reaches (or unknown); subscribe without \`after\` and reload`,
    { extensions: { code: 'EVENTS_EXPIRED' } },
  );
}

export interface MemoryEventLogOptions {
  /** Most events kept for replay. @default 1000 */
  capacity?: number;
}

/** The in-process log: a ring of the last `capacity` events, positions counting up from 1. */
export function createMemoryEventLog(options: MemoryEventLogOptions = {}): EventLog {
  const capacity = options.capacity ?? 1_000;
  const ring: LoggedEvent[] = [];
  const listeners = new Set<(logged: LoggedEvent) => void>();
  let sequence = 0;

  return {
    async append(event) {
      const logged = { position: String(++sequence), event };
      ring.push(logged);
      if (ring.length > capacity) ring.shift();
      // Fan-out after the caller's answer: listeners are subscriber work.
      setImmediate(() => {
        for (const listener of listeners) listener(logged);
      });
      return logged;
    },
    async readAfter(eventId) {
      const index = ring.findIndex((logged) => logged.event.eventId === eventId);
      if (index < 0) throw eventsExpired(eventId);
      return ring.slice(index + 1);
    },
    onAppend(listener) {
      listeners.add(listener);
      return () => void listeners.delete(listener);
    },
    compare: (a, b) => Number(a) - Number(b),
    ready: () => true,
    async close() {
      listeners.clear();
    },
  };
}
