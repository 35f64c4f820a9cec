import { describe, expect, it } from 'vitest';
import { createEventBus } from '../../src/events/event-bus.js';
import { createMemoryEventLog } from '../../src/events/event-log.js';
import type { LoggedEvent } from '../../src/events/event-log.js';
import type { TransactionUpdateEvent } from '../../src/events/normalize.js';

const event = (n: number, transactionId = `tx-${n % 3}`): TransactionUpdateEvent => ({
  eventId: `evt-${n}`,
  type: 'transaction.update',
  format: 'ENVELOPED',
  receivedAt: new Date(0).toISOString(),
  occurredAt: undefined,
  transactionId,
  status: `s-${n}`,
  products: [],
  transaction: {},
  raw: {},
});

/** A bus over an in-process log of 1 000 events (and 1 MiB). */
const memoryBus = () => createEventBus({ log: createMemoryEventLog({ capacity: 1_000, maxBytes: 1_048_576, pageEvents: 200 }) });

async function take(iterator: AsyncIterator<LoggedEvent>, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const next = await iterator.next();
    if (next.done) break;
    ids.push(next.value.event.eventId);
  }
  return ids;
}

describe.concurrent('in-process event bus', () => {
  it('delivers live events in order, filtered by transaction', async () => {
    const bus = memoryBus();
    const all = await bus.subscribe();
    const one = await bus.subscribe({ transactionId: 'tx-1' });
    for (let n = 1; n <= 6; n++) await bus.publish(event(n));
    expect(await take(all, 6)).toEqual(['evt-1', 'evt-2', 'evt-3', 'evt-4', 'evt-5', 'evt-6']);
    expect(await take(one, 2)).toEqual(['evt-1', 'evt-4']);
  });

  it('replays after an event, then goes on live, with no gap or repeat at the seam', async () => {
    const bus = memoryBus();
    for (let n = 1; n <= 10; n++) await bus.publish(event(n));
    // Published while the subscription starts: must appear once, after the replay.
    const subscribing = bus.subscribe({ after: 'evt-7' });
    const during = bus.publish(event(11));
    const resumed = await subscribing;
    await during;
    await bus.publish(event(12));
    expect(await take(resumed, 5)).toEqual(['evt-8', 'evt-9', 'evt-10', 'evt-11', 'evt-12']);
  });

  it("tells an account's subscriber its own account's cursor, which stays live after the log dropped that event", async () => {
    const bus = createEventBus({ log: createMemoryEventLog({ capacity: 3, maxBytes: 1_048_576, pageEvents: 200 }) });
    const ofAccount = (n: number, account: string): TransactionUpdateEvent => ({ ...event(n), account });
    const cursorFor = (account: string) =>
      bus.subscribe({ after: 'unknown', account }).then(
        () => expect.fail('subscribed'),
        (error: { extensions: { code: string; cursor: string } }) => {
          expect(error.extensions.code).toBe('EVENTS_EXPIRED');
          return error.extensions.cursor;
        },
      );
    const none = await cursorFor('acct-a');
    await bus.publish(ofAccount(1, 'acct-b'));
    // Nothing of A's yet: B's event changes nothing A is told.
    expect(await cursorFor('acct-a')).toBe(none);
    await bus.publish(ofAccount(2, 'acct-a'));
    const own = await cursorFor('acct-a');
    expect(own).not.toBe(none);
    // B's events push A's out of the log (capacity 3): A is still told the same, and resumes from it live.
    for (let n = 3; n <= 6; n++) await bus.publish(ofAccount(n, 'acct-b'));
    expect(await cursorFor('acct-a')).toBe(own);
    const resumed = await bus.subscribe({ after: own, account: 'acct-a' });
    await bus.publish(ofAccount(7, 'acct-b'));
    await bus.publish(ofAccount(8, 'acct-a'));
    expect(await take(resumed, 1)).toEqual(['evt-8']);
    // An older cursor of A's, once A had another event, is too old: A is told where it stands now.
    const now = await cursorFor('acct-a');
    expect(now).not.toBe(own);
    await expect(bus.subscribe({ after: none, account: 'acct-a' })).rejects.toMatchObject({
      extensions: { code: 'EVENTS_EXPIRED', cursor: now },
    });
  });

  it('rejects an `after` older than the log with EVENTS_EXPIRED, and counts no subscription for it', async () => {
    const bus = createEventBus({ log: createMemoryEventLog({ capacity: 3, maxBytes: 1_048_576, pageEvents: 200 }) });
    for (let n = 1; n <= 5; n++) await bus.publish(event(n));
    await expect(bus.subscribe({ after: 'evt-1' })).rejects.toMatchObject({ extensions: { code: 'EVENTS_EXPIRED' } });
    await expect(bus.subscribe({ after: 'unknown' })).rejects.toMatchObject({ extensions: { code: 'EVENTS_EXPIRED' } });
    expect(bus.activeSubscriptions()).toBe(0);
    expect(await take(await bus.subscribe({ after: 'evt-3' }), 2)).toEqual(['evt-4', 'evt-5']);
  });

  it('counts open subscriptions and frees them on return, even while one waits', async () => {
    const bus = memoryBus();
    const a = await bus.subscribe();
    const b = await bus.subscribe();
    expect(bus.activeSubscriptions()).toBe(2);
    const waiting = a.next();
    await a.return?.();
    expect(await waiting).toEqual({ done: true, value: undefined });
    expect(bus.activeSubscriptions()).toBe(1);
    await bus.close();
    expect(bus.activeSubscriptions()).toBe(0);
    expect(await b.next()).toEqual({ done: true, value: undefined });
  });
});

describe('in-process event log', () => {
  it('replays in pages, and the bus joins the pages and the live events without gap or repeat', async () => {
    const log = createMemoryEventLog({ capacity: 1_000, maxBytes: 1_048_576, pageEvents: 3 });
    for (let n = 1; n <= 10; n++) await log.append(event(n), 'id');
    const first = await log.readAfter('evt-1');
    expect(first.events.map((logged) => logged.event.eventId)).toEqual(['evt-2', 'evt-3', 'evt-4']);
    expect(first.next).toBe(first.events[2]!.position);
    const last = await log.readAfter((await log.readAfter(first.next!)).next!);
    expect(last.events.map((logged) => logged.event.eventId)).toEqual(['evt-8', 'evt-9', 'evt-10']);
    expect(last.next).toBeUndefined();
    const bus = createEventBus({ log });
    const resumed = await bus.subscribe({ after: 'evt-1' });
    await bus.publish(event(11));
    expect(await take(resumed, 10)).toEqual(Array.from({ length: 10 }, (_, n) => `evt-${n + 2}`));
  });

  it('keeps the span and the least count, and lets older events go', async () => {
    let now = 0;
    const log = createMemoryEventLog({
      capacity: 100,
      maxBytes: 1_048_576,
      pageEvents: 200,
      keep: { spanMs: 1_000, leastEvents: 2 },
      now: () => now,
    });
    for (let n = 1; n <= 5; n++) await log.append(event(n), 'id');
    // All within the span: all kept.
    expect((await log.readAfter('evt-1')).events).toHaveLength(4);
    now = 2_000;
    await log.append(event(6), 'id');
    // Older than the span: gone, but for the newest two.
    await expect(log.readAfter('evt-4')).rejects.toMatchObject({ extensions: { code: 'EVENTS_EXPIRED' } });
    expect((await log.readAfter('evt-5')).events.map((logged) => logged.event.eventId)).toEqual(['evt-6']);
  });

  it('resolves an event id that appears twice to its newest copy', async () => {
    // Past the dedupe memory (a day), a sender may reuse an id.
    let now = 0;
    const log = createMemoryEventLog({ capacity: 1_000, maxBytes: 1_048_576, pageEvents: 200, now: () => now });
    for (const id of ['a', 'b', 'a', 'c']) {
      await log.append({ ...event(1), eventId: id }, 'id');
      now += 86_400_001;
    }
    expect((await log.readAfter('a')).events.map((logged) => logged.event.eventId)).toEqual(['c']);
  });

  it('keeps at most maxBytes of events, the oldest going first (700 KB webhooks once took a gateway to 2 GB)', async () => {
    const log = createMemoryEventLog({ capacity: 1_000, maxBytes: 250_000, pageEvents: 200 });
    const big = (n: number) => ({ ...event(n), raw: { blob: 'x'.repeat(100_000) } });
    for (let n = 1; n <= 10; n++) await log.append(big(n), 'id');
    // Two events fit in the bound: evt-9 and evt-10.
    await expect(log.readAfter('evt-8')).rejects.toMatchObject({ extensions: { code: 'EVENTS_EXPIRED' } });
    expect((await log.readAfter('evt-9')).events.map((logged) => logged.event.eventId)).toEqual(['evt-10']);
    // The newest is always kept, however large.
    await log.append({ ...event(11), raw: { blob: 'y'.repeat(400_000) } }, 'id');
    await expect(log.readAfter('evt-10')).rejects.toMatchObject({ extensions: { code: 'EVENTS_EXPIRED' } });
    expect((await log.readAfter('evt-11')).events).toEqual([]);
  });
});
