import type { ExecutionResult } from 'graphql';
import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../src/errors.js';
import { createEventBus, type EventBusOptions } from '../../src/events/event-bus.js';
import { createMemoryEventLog, type LoggedEvent } from '../../src/events/event-log.js';
import type { TransactionUpdateEvent } from '../../src/events/normalize.js';
import { endedOnRefusal } from '../../src/graphql/use-key-watch.js';
import { createShutdownHold } from '../../src/subscriptions/shutdown-hold.js';
import { createSharedSubscriptions } from '../../src/subscriptions/shared-subscriptions.js';

/*
 * The hand-written async iterators (docs/ARCHITECTURE.md, "Async iterators"):
 * what each must keep that a generic iterator constructor would not give for
 * free. Every source here is a real event bus subscription, so "the source was
 * returned" is read from `activeSubscriptions()`.
 */

/** A bus over an in-process log of 1 000 events (and 1 MiB). */
const memoryBus = (options: Omit<EventBusOptions, 'log'> = {}) =>
  createEventBus({ log: createMemoryEventLog({ capacity: 1_000, maxBytes: 1_048_576, pageEvents: 200 }), ...options });

const event = (n: number): TransactionUpdateEvent => ({
  eventId: `evt-${n}`,
  type: 'transaction.update',
  format: 'ENVELOPED',
  receivedAt: new Date(0).toISOString(),
  occurredAt: undefined,
  transactionId: `tx-${n}`,
  status: `s-${n}`,
  products: [],
  transaction: {},
  raw: {},
});

/** The log hands events to its listeners on the next turn. */
const fannedOut = () => new Promise((resolve) => setImmediate(resolve));

async function publish(bus: ReturnType<typeof createEventBus>, ...ns: number[]): Promise<void> {
  for (const n of ns) await bus.publish(event(n));
  await fannedOut();
}

const idOf = (result: IteratorResult<unknown>) => (result.done ? 'done' : (result.value as LoggedEvent).event.eventId);

/** Whether `promise` has settled once everything already queued has run. */
async function settledYet(promise: Promise<unknown>): Promise<boolean> {
  let settled = false;
  void promise.then(
    () => (settled = true),
    () => (settled = true),
  );
  await fannedOut();
  return settled;
}

describe('event bus subscription', () => {
  it(
    'ends a subscriber that falls more than maxQueuedPerSubscriber behind with an error, ' + 'frees it, and leaves the others alone',
    async () => {
      const bus = memoryBus({ maxQueuedPerSubscriber: 3 });
      const slow = await bus.subscribe();
      const reader = await bus.subscribe();
      const read: string[] = [];
      const reading = (async () => {
        for await (const logged of reader) read.push(logged.event.eventId);
      })();
      await publish(bus, 1, 2, 3, 4);
      expect(bus.activeSubscriptions()).toBe(1);
      await expect(slow.next()).rejects.toThrow(/fell too far behind/);
      await bus.close();
      await reading;
      expect(read).toEqual(['evt-1', 'evt-2', 'evt-3', 'evt-4']);
    },
  );

  it('on close, delivers what it already holds and only then ends; it counts as open until then', async () => {
    const bus = memoryBus();
    const held = await bus.subscribe();
    await publish(bus, 1, 2);
    await bus.close();
    expect(bus.activeSubscriptions()).toBe(1);
    expect([idOf(await held.next()), idOf(await held.next())]).toEqual(['evt-1', 'evt-2']);
    expect(idOf(await held.next())).toBe('done');
    expect(bus.activeSubscriptions()).toBe(0);
  });

  it('on close, ends a subscriber waiting in next() at once', async () => {
    const bus = memoryBus();
    const waiter = await bus.subscribe();
    const waiting = waiter.next();
    await bus.close();
    expect(await waiting).toEqual({ done: true, value: undefined });
    expect(bus.activeSubscriptions()).toBe(0);
  });
});

describe('shared subscription members', () => {
  const start = (bus: ReturnType<typeof createEventBus>) => async () =>
    (await bus.subscribe()) as unknown as AsyncIterable<ExecutionResult>;

  it('without `send`, get every result in order, and end when the group source ends', async () => {
    const bus = memoryBus();
    const shared = createSharedSubscriptions();
    const a = (await shared.join('k', start(bus))) as AsyncIterableIterator<ExecutionResult>;
    const b = (await shared.join('k', start(bus))) as AsyncIterableIterator<ExecutionResult>;
    expect(bus.activeSubscriptions()).toBe(1);
    const waiting = a.next();
    await publish(bus, 1, 2);
    expect([idOf(await waiting), idOf(await a.next())]).toEqual(['evt-1', 'evt-2']);
    expect([idOf(await b.next()), idOf(await b.next())]).toEqual(['evt-1', 'evt-2']);
    await bus.close();
    expect([idOf(await a.next()), idOf(await b.next())]).toEqual(['done', 'done']);
    expect([shared.groups(), shared.members()]).toEqual([0, 0]);
  });

  it('with `send`, get each result serialised once for all, while the iterator only reports the end', async () => {
    const bus = memoryBus();
    const shared = createSharedSubscriptions();
    const sent: string[][] = [[], []];
    const a = (await shared.join('k', start(bus), (json) => sent[0]!.push(json))) as AsyncIterableIterator<ExecutionResult>;
    await shared.join('k', start(bus), (json) => sent[1]!.push(json));
    const end = a.next();
    await publish(bus, 1);
    expect(await settledYet(end)).toBe(false);
    expect(sent[0]).toHaveLength(1);
    expect(sent[1]![0]).toBe(sent[0]![0]);
    expect(JSON.parse(sent[0]![0]!)).toMatchObject({ event: { eventId: 'evt-1' } });
    await bus.close();
    expect(await end).toEqual({ done: true, value: undefined });
  });

  it('leave when returned, even before their first next(); the last one to leave returns the source', async () => {
    const bus = memoryBus();
    const shared = createSharedSubscriptions();
    const a = (await shared.join('k', start(bus), () => {})) as AsyncIterableIterator<ExecutionResult>;
    const b = (await shared.join('k', start(bus), () => {})) as AsyncIterableIterator<ExecutionResult>;
    await a.return?.();
    expect([shared.groups(), shared.members(), bus.activeSubscriptions()]).toEqual([1, 1, 1]);
    const waiting = b.next();
    await b.return?.();
    expect(await waiting).toEqual({ done: true, value: undefined });
    expect([shared.groups(), shared.members(), bus.activeSubscriptions()]).toEqual([0, 0, 0]);
  });
});

describe('restart hold', () => {
  it('returns the source when returned before its first next()', async () => {
    const bus = memoryBus();
    const wrapped = createShutdownHold().wrap(await bus.subscribe()) as AsyncIterableIterator<LoggedEvent>;
    expect(bus.activeSubscriptions()).toBe(1);
    await wrapped.return?.();
    expect(bus.activeSubscriptions()).toBe(0);
  });

  it('passes results through and ends with its source while not holding', async () => {
    const bus = memoryBus();
    const wrapped = createShutdownHold().wrap(await bus.subscribe()) as AsyncIterableIterator<LoggedEvent>;
    await publish(bus, 1);
    await bus.close();
    expect([idOf(await wrapped.next()), idOf(await wrapped.next())]).toEqual(['evt-1', 'done']);
  });

  it('once holding, keeps a subscription whose source ended open and silent until it is returned', async () => {
    const bus = memoryBus();
    const hold = createShutdownHold();
    const wrapped = hold.wrap(await bus.subscribe()) as AsyncIterableIterator<LoggedEvent>;
    await publish(bus, 1);
    hold.hold();
    await bus.close();
    expect(idOf(await wrapped.next())).toBe('evt-1');
    const held = wrapped.next();
    await hold.settled(10_000);
    expect(await settledYet(held)).toBe(false);
    await wrapped.return?.();
    expect(await held).toEqual({ done: true, value: undefined });
  });
});

describe('forward-mode key watch', () => {
  function watcher() {
    const state = { refuse: undefined as ((error: GatewayError) => void) | undefined, watching: 0 };
    const watch = (onRefused: (error: GatewayError) => void) => {
      state.refuse = onRefused;
      state.watching += 1;
      return () => void (state.watching -= 1);
    };
    return { state, watch };
  }
  const refusal = new GatewayError('FORBIDDEN', 'The upstream refuses this key');

  it('passes results through; when the source ends, stops watching', async () => {
    const bus = memoryBus();
    const { state, watch } = watcher();
    const results = endedOnRefusal((await bus.subscribe()) as unknown as AsyncIterable<ExecutionResult>, watch);
    await publish(bus, 1);
    await bus.close();
    expect([idOf(await results.next()), idOf(await results.next())]).toEqual(['evt-1', 'done']);
    expect(state.watching).toBe(0);
  });

  it('answers a next() waiting for an event with one result carrying the refusal, then ends, returning the source', async () => {
    const bus = memoryBus();
    const { state, watch } = watcher();
    const results = endedOnRefusal((await bus.subscribe()) as unknown as AsyncIterable<ExecutionResult>, watch);
    const waiting = results.next();
    state.refuse?.(refusal);
    expect(await waiting).toEqual({ done: false, value: { errors: [refusal] } });
    expect(await results.next()).toEqual({ done: true, value: undefined });
    expect([state.watching, bus.activeSubscriptions()]).toEqual([0, 0]);
  });

  it('returns the source and stops watching when returned before its first next()', async () => {
    const bus = memoryBus();
    const { state, watch } = watcher();
    const results = endedOnRefusal((await bus.subscribe()) as unknown as AsyncIterable<ExecutionResult>, watch);
    await results.return?.();
    expect([state.watching, bus.activeSubscriptions()]).toEqual([0, 0]);
  });
});
