import { createPubSub, filter, pipe, Repeater, type PubSub } from 'graphql-yoga';
import type { TypedEventTarget } from '@graphql-yoga/typed-event-target';
import type { TransactionUpdateEvent } from './normalize.js';

/*
 * The event bus between webhooks and subscriptions: yoga's PubSub over a
 * pluggable event target, so a Redis target replaces the in-process one
 * without touching resolvers (DESIGN §1).
 */

export const TRANSACTION_UPDATED = 'transaction.update';

type Channels = { [TRANSACTION_UPDATED]: [TransactionUpdateEvent] };

export interface EventBus {
  publish(event: TransactionUpdateEvent): void;
  /** Events as they come, only those of `transactionId` when given; ends when the consumer returns. */
  subscribe(transactionId?: string | null): AsyncIterable<TransactionUpdateEvent>;
  /** Subscriptions open right now, for tests and metrics. */
  activeSubscriptions(): number;
}

export interface EventBusOptions {
  /** @default an in-process EventTarget */
  eventTarget?: TypedEventTarget<CustomEvent>;
}

export function createEventBus(options: EventBusOptions = {}): EventBus {
  const pubSub: PubSub<Channels> = createPubSub<Channels>(options.eventTarget ? { eventTarget: options.eventTarget as never } : undefined);
  let active = 0;

  return {
    publish: (event) => pubSub.publish(TRANSACTION_UPDATED, event),
    subscribe(transactionId) {
      const source = pubSub.subscribe(TRANSACTION_UPDATED);
      const events = transactionId ? pipe(source, filter((event: TransactionUpdateEvent) => event.transactionId === transactionId)) : source;
      // A Repeater, so leaving is immediate even while waiting for the next event,
      // and the count drops however the consumer leaves.
      return new Repeater<TransactionUpdateEvent>(async (push, stop) => {
        active += 1;
        const iterator = events[Symbol.asyncIterator]();
        void stop.then(() => iterator.return?.());
        try {
          for (let next = await iterator.next(); !next.done; next = await iterator.next()) await push(next.value);
        } finally {
          active -= 1;
          stop();
        }
      });
    },
    activeSubscriptions: () => active,
  };
}
