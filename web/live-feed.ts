import { createClient, type Client } from 'graphql-ws';
import { print } from 'graphql';
import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
import {
  LiveTransactionsDocument,
  LiveVendingsDocument,
  ResumeTransactionsDocument,
  ResumeVendingsDocument,
  type LiveTransactionsSubscription,
  type LiveVendingsSubscription,
} from '../src/graphql/generated/operations.js';
import { describeProblem } from './api.js';

export type TransactionEvent = LiveTransactionsSubscription['transactionUpdated'];
export type VendingEvent = LiveVendingsSubscription['vendingUpdated'];
export type FeedState = 'connecting' | 'connected' | 'reconnecting';

export interface FeedHandlers {
  onEvent(event: TransactionEvent): void;
  /** A machine's status, online, enabled or products changed. */
  onVending(event: VendingEvent): void;
  onState(state: FeedState): void;
  /** Something the operator should read: a refusal, or events that could not be replayed. */
  onNotice(message: string, fatal: boolean): void;
}

/** One stream the feed follows: its live and resuming documents, the event in a result, and where it resumes. */
interface Stream<T> {
  live: TypedDocumentNode<unknown, Record<string, never>>;
  resume: TypedDocumentNode<unknown, { after: string }>;
  eventOf(data: unknown): (T & { eventId: string }) | undefined;
  deliver(event: T): void;
  lastEventId: string | undefined;
}

/*
 * The live feed over graphql-ws: transaction updates and machine changes, two
 * subscriptions on one connection. After any disconnect (the gateway
 * restarted, the network dropped) it reconnects by itself with a growing
 * pause, and each resumes after the last event it showed, so nothing is
 * missed; when the gateway no longer holds that event (EVENTS_EXPIRED) it goes on live.
 */
export function startLiveFeed(key: string, handlers: FeedHandlers): () => void {
  const transactions: Stream<TransactionEvent> = {
    live: LiveTransactionsDocument,
    resume: ResumeTransactionsDocument,
    eventOf: (data) => (data as LiveTransactionsSubscription | undefined)?.transactionUpdated,
    deliver: (event) => handlers.onEvent(event),
    lastEventId: undefined,
  };
  const vendings: Stream<VendingEvent> = {
    live: LiveVendingsDocument,
    resume: ResumeVendingsDocument,
    eventOf: (data) => (data as LiveVendingsSubscription | undefined)?.vendingUpdated,
    deliver: (event) => handlers.onVending(event),
    lastEventId: undefined,
  };
  let client: Client | undefined;
  let attempt = 0;
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;

  const url = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/graphql`;

  function retry(): void {
    if (stopped) return;
    handlers.onState('reconnecting');
    void client?.dispose();
    client = undefined;
    timer = setTimeout(connect, Math.min(500 * 2 ** attempt++, 5_000));
  }

  function connect(): void {
    if (stopped) return;
    handlers.onState(attempt === 0 ? 'connecting' : 'reconnecting');
    const current = createClient({
      url,
      connectionParams: { Authorization: key, demoSimulator: true },
      retryAttempts: 0,
      lazy: false,
      on: {
        connected: () => {
          attempt = 0;
          handlers.onState('connected');
        },
        closed: (event) => {
          if (current !== client) return;
          if ((event as CloseEvent).code === 4403) {
            stopped = true;
            handlers.onNotice(describeProblem('UNAUTHENTICATED', ''), true);
            return;
          }
          retry();
        },
      },
    });
    client = current;
    subscribe(current, transactions);
    subscribe(current, vendings);
  }

  /** Resumes after the last event shown when there is one, else goes on live. */
  function subscribe<T>(current: Client, stream: Stream<T>): void {
    const resuming = stream.lastEventId !== undefined;
    const query = print(resuming ? stream.resume : stream.live);
    let replaced = false;
    current.subscribe(
      { query, variables: resuming ? { after: stream.lastEventId } : {} },
      {
        next(result) {
          const code = result.errors?.[0]?.extensions?.code as string | undefined;
          if (code === 'EVENTS_EXPIRED') {
            // The gateway no longer holds what came after our last event (it restarted): go on live at once.
            handlers.onNotice('The gateway restarted and could not replay what happened meanwhile; showing new events from now on.', false);
            stream.lastEventId = undefined;
            replaced = true;
            subscribe(current, stream);
            return;
          }
          // A key without the `subscribe` permission would be refused again on every retry; the rest of the page still works.
          if (code === 'FORBIDDEN') {
            stopped = true;
            return handlers.onNotice(`No live events: ${String(result.errors?.[0]?.message)}.`, false);
          }
          const event = stream.eventOf(result.data);
          // An event with errors is partial data (the service no longer returns its transaction: `transaction` is
          // null with NOT_FOUND): the event's own fields still say what happened, so it is shown; only a result
          // without an event is a problem to read.
          if (!event) {
            if (result.errors?.length) handlers.onNotice(describeProblem(code, String(result.errors[0]?.message)), false);
            return;
          }
          stream.lastEventId = event.eventId;
          stream.deliver(event);
        },
        error: () => {
          if (current === client) retry();
        },
        complete: () => {
          // The gateway completes every subscription when it shuts down; a replaced one just ends.
          if (current === client && !replaced) retry();
        },
      },
    );
  }

  connect();
  return () => {
    stopped = true;
    clearTimeout(timer);
    void client?.dispose();
  };
}
