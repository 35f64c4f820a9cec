import { randomUUID } from 'node:crypto';
import { buildWebhookRequest } from '../../src/events/webhook-request.js';
import { TEST_KEY, type RunningGateway } from './gateway.js';
import { deliverWebhook } from './redis-deployment.js';
import { waitFor } from './wait-for.js';
import { subscribe, wsClient, type QueuedSubscription } from './ws-client.js';

/*
 * What a failover test watches from outside the gateway: each instance's
 * /readyz over time, subscribers that stay on one connection, and a sender
 * that keeps sending webhooks (each retried on 503 as the contract's service
 * does) and remembers which ones were answered 200.
 */

/** What watchReadiness and keepSending started and a test has not stopped yet (a failed test leaves them running). */
const running = new Set<() => Promise<void> | void>();

/** Stops every watcher and sender still running: for afterAll, before the gateways close. */
export async function stopWatching(): Promise<void> {
  await Promise.all([...running].map((stop) => Promise.resolve(stop()).catch(() => {})));
}

/** Polls /readyz every `everyMs` and keeps every answer (0: no answer). */
export function watchReadiness(gateway: RunningGateway, everyMs = 50): { seen: number[]; last(): number | undefined; stop(): void } {
  const seen: number[] = [];
  let stopped = false;
  const stop = () => {
    stopped = true;
    running.delete(stop);
  };
  running.add(stop);
  void (async () => {
    while (!stopped) {
      const status = await fetch(`${gateway.url}/readyz`, { signal: AbortSignal.timeout(5_000) }).then(
        (response) => response.status,
        () => 0,
      );
      seen.push(status);
      await new Promise((resolve) => setTimeout(resolve, everyMs));
    }
  })();
  return { seen, last: () => seen.at(-1), stop };
}

/** Whether `seen` went to 503 at some point and is 200 again at its end. */
export const wentDownAndUp = (seen: readonly number[]): boolean => {
  const down = seen.indexOf(503);
  return down >= 0 && seen.at(-1) === 200 && seen.slice(down).includes(200);
};

export interface LiveSubscriber {
  sub: QueuedSubscription;
  /** The event ids received, in order. */
  ids(): string[];
  dispose(): Promise<void>;
}

/** A graphql-ws subscriber on `gateway`, resolved once it is live (a first webhook sent to `via` reached it). */
export async function liveSubscriber(gateway: RunningGateway): Promise<LiveSubscriber> {
  const client = wsClient(gateway.url, TEST_KEY);
  const before = gateway.gateway.activeSubscriptions();
  const sub = subscribe(client, 'subscription { transactionUpdated { eventId status } }');
  if (!(await waitFor(() => gateway.gateway.activeSubscriptions() > before, 10_000))) throw new Error('the subscription never started');
  return {
    sub,
    ids: () => sub.received.map((result) => String(result.data?.transactionUpdated?.eventId)),
    dispose: async () => void (await client.dispose()),
  };
}

/** Whether the subscriber's subscription has ended by now (completed or failed) or is still open. */
export const subscriptionState = (subscriber: LiveSubscriber): Promise<'ended' | 'open'> =>
  Promise.race([
    subscriber.sub.ended.then(
      () => 'ended' as const,
      () => 'ended' as const,
    ),
    Promise.resolve('open' as const),
  ]);

export interface WebhookSender {
  /** Event ids answered 200, in the order answered. */
  accepted: string[];
  /** Answers 503 met (each retried). */
  refused: number;
  /** Why sending stopped before stop() was called (a webhook refused for good), for a test's failure message. */
  failure: string | undefined;
  /** The body of the last 503 met, and when: what the gateway said while it could not take webhooks. */
  lastRefusal: { at: number; body: string } | undefined;
  /** Stops after the webhook under way; resolves once it is answered. */
  stop(): Promise<void>;
}

/** Sends webhooks one after another, to the gateways in turn, `paceMs` apart, until stopped. */
export function keepSending(gateways: readonly RunningGateway[], label: string, paceMs = 20): WebhookSender {
  const sender: WebhookSender = { accepted: [], refused: 0, failure: undefined, lastRefusal: undefined, stop: async () => {} };
  let stopped = false;
  const loop = (async () => {
    for (let n = 0; !stopped; n++) {
      const id = `${label}-${n}-${randomUUID()}`;
      const request = buildWebhookRequest({
        form: 'enveloped',
        id,
        transaction: { transactionId: `tx-${label}-${n}`, status: 'completed', products: [] },
      });
      const { status, retryAfter } = await deliverWebhook(gateways[n % gateways.length]!, request, (body) => {
        sender.lastRefusal = { at: Date.now(), body: body.slice(0, 300) };
      });
      sender.refused += retryAfter.length;
      if (status !== 200) throw new Error(`webhook answered ${status}`);
      sender.accepted.push(id);
      await new Promise((resolve) => setTimeout(resolve, paceMs));
    }
  })();
  // Held until stop() (which throws what failed): a test that fails first must not leave an unhandled rejection behind.
  loop.catch((error: unknown) => (sender.failure = String(error)));
  sender.stop = async () => {
    stopped = true;
    running.delete(sender.stop);
    await loop;
  };
  running.add(sender.stop);
  return sender;
}

/**
 * What a failover test says when the sender's count stops growing: why the sender stopped, the last refusal a
 * gateway gave and how long ago, and what each gateway's /readyz says now.
 */
export async function senderReport(sender: WebhookSender, gateways: readonly RunningGateway[]): Promise<string> {
  const readiness = await Promise.all(
    gateways.map((gateway) =>
      fetch(`${gateway.url}/readyz`, { signal: AbortSignal.timeout(5_000) }).then(
        async (response) => `${response.status} ${await response.text()}`,
        (error: unknown) => String(error),
      ),
    ),
  );
  const refusal = sender.lastRefusal;
  return JSON.stringify({
    accepted: sender.accepted.length,
    refused: sender.refused,
    failure: sender.failure,
    lastRefusal: refusal && { msAgo: Date.now() - refusal.at, body: refusal.body },
    readiness,
  });
}

/** What one subscriber got of the accepted ids: how many it received, which it lacks, how many came twice. */
function tally(subscriber: LiveSubscriber, accepted: readonly string[]): { received: number; lacking: string[]; twice: number } {
  const ids = subscriber.ids();
  const got = new Set(ids);
  return { received: ids.length, lacking: accepted.filter((id) => !got.has(id)), twice: ids.length - got.size };
}

/** For a failing test: per subscriber, how many accepted ids it lacks (the first few) and how many it got twice. */
export function deliveryReport(subscribers: readonly LiveSubscriber[], accepted: readonly string[]): string {
  return JSON.stringify(
    subscribers.map((subscriber) => {
      const { received, lacking, twice } = tally(subscriber, accepted);
      return { received, lacking: lacking.length, firstLacking: lacking.slice(0, 3), twice };
    }),
  );
}

/** Whether every subscriber received every accepted id, and nothing twice. */
export function receivedExactlyOnce(subscribers: readonly LiveSubscriber[], accepted: readonly string[]): boolean {
  return subscribers.every((subscriber) => {
    const { lacking, twice } = tally(subscriber, accepted);
    return lacking.length === 0 && twice === 0;
  });
}
