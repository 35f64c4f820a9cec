import { ApolloClient, InMemoryCache, gql } from '@apollo/client';
import { GraphQLWsLink } from '@apollo/client/link/subscriptions';
import { Client as UrqlClient, subscriptionExchange } from '@urql/core';
import { EventSource } from 'eventsource';
import { createClient as createSseClient, type Client as SseClient } from 'graphql-sse';
import { createClient as createWsClient, type Client as WsClient } from 'graphql-ws';
import WebSocket from 'ws';

/*
 * The subscription clients users run, each with its DEFAULT settings (retries,
 * back-off, reconnects); only what Node needs is supplied (graphql-ws's
 * WebSocket implementation) and the key. Every client records what it sees
 * the same way, so a test can compare them.
 */

export interface TransactionUpdate {
  eventId: string;
  status: string;
}

export interface RecordingClient {
  name: string;
  /** Every `transactionUpdated` received, in order. */
  received: TransactionUpdate[];
  /** Set when the client reported the subscription ended: `complete`, or an error's text. */
  ended: string | undefined;
  close(): void;
}

const DOCUMENT = 'subscription Updates($after: ID) { transactionUpdated(after: $after) { eventId status } }';

type Result = { data?: { transactionUpdated?: TransactionUpdate } | null; errors?: readonly unknown[] };

function recorder(name: string): RecordingClient & { onResult(result: Result): void; onEnd(how: unknown): void } {
  const client = {
    name,
    received: [] as TransactionUpdate[],
    ended: undefined as string | undefined,
    close: () => {},
    onResult(result: Result) {
      const update = result.data?.transactionUpdated;
      if (update) client.received.push({ eventId: update.eventId, status: update.status });
      else client.ended = `error result: ${JSON.stringify(result.errors)}`;
    },
    onEnd(how: unknown) {
      client.ended ??= how === 'complete' ? 'complete' : `error: ${how instanceof Error ? how.message : JSON.stringify(how)}`;
    },
  };
  return client;
}

/** graphql-ws's dispose rejects with the abandoned attempt's close reason when it comes during a reconnect wait. */
const disposeQuietly = (ws: WsClient) => void Promise.resolve(ws.dispose()).catch(() => {});

/** A graphql-ws client with its defaults, as Apollo and urql are given one. */
export function defaultWsClient(httpUrl: string, key: string): WsClient {
  return createWsClient({
    url: `${httpUrl.replace(/^http/, 'ws')}/graphql`,
    webSocketImpl: WebSocket,
    connectionParams: { Authorization: key },
  });
}

/**
 * graphql-ws `createClient`. With `resume`, the payload's `after` follows the
 * last event seen: graphql-ws sends the same payload object again when it
 * resubscribes after a reconnect, so the gateway replays what was missed.
 */
export function graphqlWsClient(httpUrl: string, key: string, { resume = false } = {}): RecordingClient {
  const rec = recorder(resume ? 'graphql-ws (resuming)' : 'graphql-ws');
  const ws = defaultWsClient(httpUrl, key);
  const payload = { query: DOCUMENT, variables: { after: null as string | null } };
  const stop = ws.subscribe<{ transactionUpdated: TransactionUpdate }>(payload, {
    next: (result) => {
      rec.onResult(result);
      const eventId = result.data?.transactionUpdated.eventId;
      if (resume && eventId) payload.variables.after = eventId;
    },
    error: (error) => rec.onEnd(error),
    complete: () => rec.onEnd('complete'),
  });
  rec.close = () => {
    stop();
    disposeQuietly(ws);
  };
  return rec;
}

/** Apollo Client over its GraphQLWsLink. */
export function apolloClient(httpUrl: string, key: string): RecordingClient {
  const rec = recorder('Apollo Client');
  const ws = defaultWsClient(httpUrl, key);
  const apollo = new ApolloClient({ link: new GraphQLWsLink(ws), cache: new InMemoryCache() });
  const subscription = apollo.subscribe({ query: gql(DOCUMENT) }).subscribe({
    next: (result) => rec.onResult(result as Result),
    error: (error: unknown) => rec.onEnd(error),
    complete: () => rec.onEnd('complete'),
  });
  rec.close = () => {
    subscription.unsubscribe();
    disposeQuietly(ws);
  };
  return rec;
}

/** urql (`@urql/core`) with its subscriptionExchange forwarding to graphql-ws, as urql's docs show. */
export function urqlClient(httpUrl: string, key: string): RecordingClient {
  const rec = recorder('urql');
  const ws = defaultWsClient(httpUrl, key);
  const unsubscribe = urqlOver(httpUrl, ws, DOCUMENT, rec);
  rec.close = () => {
    unsubscribe();
    disposeQuietly(ws);
  };
  return rec;
}

/**
 * urql's subscriptionExchange forwarding `document` to `subscribe(input, sink)` of graphql-ws or graphql-sse (the
 * same shape), as urql's docs show; urql reports a source's end only as the end of the stream of results.
 */
export function urqlOver(
  httpUrl: string,
  client: WsClient | SseClient,
  document: string,
  rec: { onResult(result: Result): void; onEnd(how: unknown): void },
): () => void {
  const urql = new UrqlClient({
    url: `${httpUrl}/graphql`,
    exchanges: [
      subscriptionExchange({
        forwardSubscription(request) {
          const input = { ...request, query: request.query ?? '' };
          return { subscribe: (sink) => ({ unsubscribe: client.subscribe(input, sink) }) };
        },
      }),
    ],
  });
  const { unsubscribe } = urql.subscription(document, {}).subscribe((result) => {
    if (result.error) rec.onEnd(result.error);
    else rec.onResult(result as Result);
  });
  return unsubscribe;
}

/** graphql-sse `createClient` (distinct connections mode, its default). */
export function graphqlSseClient(httpUrl: string, key: string): RecordingClient {
  const rec = recorder('graphql-sse');
  const sse = createSseClient({ url: `${httpUrl}/graphql`, headers: { Authorization: key } });
  const stop = sse.subscribe(
    { query: DOCUMENT },
    { next: (result) => rec.onResult(result as Result), error: (error) => rec.onEnd(error), complete: () => rec.onEnd('complete') },
  );
  rec.close = () => {
    stop();
    sse.dispose();
  };
  return rec;
}

/**
 * The `eventsource` package over GET, the browser's EventSource API: it
 * reconnects by itself and sends the last `id:` back as Last-Event-ID. A
 * `complete` event means the operation is over (the GraphQL over SSE
 * protocol), so it closes the source, as an application would.
 */
export function eventSourceClient(httpUrl: string, key: string): RecordingClient {
  const rec = recorder('eventsource');
  const url = `${httpUrl}/graphql?query=${encodeURIComponent(DOCUMENT)}`;
  const source = new EventSource(url, {
    fetch: (input, init) => fetch(input, { ...init, headers: { ...init.headers, Authorization: key } }),
  });
  source.addEventListener('next', (event) => rec.onResult(JSON.parse(event.data) as Result));
  source.addEventListener('complete', () => {
    rec.onEnd('complete');
    source.close();
  });
  rec.close = () => source.close();
  return rec;
}
