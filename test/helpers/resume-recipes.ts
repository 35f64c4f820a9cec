import { ApolloClient, InMemoryCache, gql } from '@apollo/client';
import { GraphQLWsLink } from '@apollo/client/link/subscriptions';
import { EventSource } from 'eventsource';
import { createClient as createSseClient, type Client as SseClient } from 'graphql-sse';
import { createClient as createWsClient, type Client as WsClient } from 'graphql-ws';
import { build } from 'esbuild';
import WebSocket from 'ws';
import { launchChromium } from './browser.js';
import { urqlOver, type RecordingClient, type TransactionUpdate } from './real-clients.js';

/*
 * The recipes of docs/subscriptions.md ("Resume with your client"), as a user
 * copies them: each client keeps the last eventId it saw and hands it to the
 * connection (graphql-ws's connectionParams, graphql-sse's Last-Event-ID
 * header), which the library asks again on every reconnect; and each retries
 * a refused connection, since no load balancer holds it while an instance
 * restarts. The subscription's own variables are never touched: Apollo and
 * urql resubscribe from copies of them.
 */

const DOCUMENT = 'subscription Updates { transactionUpdated { eventId status } }';

type Result = { data?: { transactionUpdated?: TransactionUpdate } | null; errors?: readonly unknown[] };

/** Waits 1, 2, 4 s… between attempts, at most `capMs`, with jitter (the libraries' own back-off, capped). */
const cappedBackoff = (capMs: number) => (retries: number) =>
  new Promise<void>((resolve) => setTimeout(resolve, Math.min(1_000 * 2 ** retries, capMs) + Math.random() * 300));

/** What every recipe records, and the cursor it keeps. */
function recorder(name: string) {
  const rec = {
    name,
    received: [] as TransactionUpdate[],
    ended: undefined as string | undefined,
    /** The last eventId seen: what the connection carries when it (re)connects. */
    after: undefined as string | undefined,
    close: () => {},
    onResult(result: Result) {
      const update = result.data?.transactionUpdated;
      if (!update) {
        rec.ended = `error result: ${JSON.stringify(result.errors)}`;
        return;
      }
      rec.received.push({ eventId: update.eventId, status: update.status });
      rec.after = update.eventId;
    },
    onEnd(how: unknown) {
      rec.ended ??= how === 'complete' ? 'complete' : `error: ${how instanceof Error ? how.message : JSON.stringify(how)}`;
    },
  };
  return rec;
}

/** graphql-ws's dispose rejects with the abandoned attempt's close reason when it comes during a reconnect wait. */
const disposeQuietly = (client: WsClient | SseClient) => void Promise.resolve(client.dispose()).catch(() => {});

/** The graphql-ws client of the recipes: the cursor in connectionParams, every failure retried. */
function resumingWsClient(httpUrl: string, key: string, cursor: () => string | undefined, retryCapMs: number): WsClient {
  return createWsClient({
    url: `${httpUrl.replace(/^http/, 'ws')}/graphql`,
    webSocketImpl: WebSocket,
    // Asked on every (re)connect: the gateway resumes each subscription of the connection after it.
    connectionParams: () => ({ Authorization: key, after: cursor() }),
    // A restarting instance refuses connections; graphql-ws's default gives up on that.
    shouldRetry: () => true,
    retryAttempts: Number.POSITIVE_INFINITY,
    retryWait: cappedBackoff(retryCapMs),
  });
}

/** The graphql-sse client of the recipes: the cursor as Last-Event-ID, asked on every (re)connect. */
function resumingSseClient(httpUrl: string, key: string, cursor: () => string | undefined, retryCapMs: number): SseClient {
  return createSseClient({
    url: `${httpUrl}/graphql`,
    headers: (): Record<string, string> => {
      const after = cursor();
      return after ? { Authorization: key, 'Last-Event-ID': after } : { Authorization: key };
    },
    retryAttempts: Number.POSITIVE_INFINITY,
    retry: cappedBackoff(retryCapMs),
  });
}

export interface RecipeOptions {
  /** Longest wait between two reconnection attempts. */
  retryCapMs?: number;
}

export type Recipe = (httpUrl: string, key: string, options?: RecipeOptions) => RecordingClient;

export const apolloRecipe: Recipe = (httpUrl, key, { retryCapMs = 2_000 } = {}) => {
  const rec = recorder('Apollo Client (GraphQLWsLink)');
  const ws = resumingWsClient(httpUrl, key, () => rec.after, retryCapMs);
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
};

export const urqlWsRecipe: Recipe = (httpUrl, key, { retryCapMs = 2_000 } = {}) => {
  const rec = recorder('urql (graphql-ws)');
  const ws = resumingWsClient(httpUrl, key, () => rec.after, retryCapMs);
  const unsubscribe = urqlOver(httpUrl, ws, DOCUMENT, rec);
  rec.close = () => {
    unsubscribe();
    disposeQuietly(ws);
  };
  return rec;
};

export const urqlSseRecipe: Recipe = (httpUrl, key, { retryCapMs = 2_000 } = {}) => {
  const rec = recorder('urql (graphql-sse)');
  const sse = resumingSseClient(httpUrl, key, () => rec.after, retryCapMs);
  const unsubscribe = urqlOver(httpUrl, sse, DOCUMENT, rec);
  rec.close = () => {
    unsubscribe();
    disposeQuietly(sse);
  };
  return rec;
};

export const graphqlWsRecipe: Recipe = (httpUrl, key, { retryCapMs = 2_000 } = {}) => {
  const rec = recorder('graphql-ws');
  const ws = resumingWsClient(httpUrl, key, () => rec.after, retryCapMs);
  const stop = ws.subscribe(
    { query: DOCUMENT },
    { next: (result) => rec.onResult(result as Result), error: (error) => rec.onEnd(error), complete: () => rec.onEnd('complete') },
  );
  rec.close = () => {
    stop();
    disposeQuietly(ws);
  };
  return rec;
};

export const graphqlSseRecipe: Recipe = (httpUrl, key, { retryCapMs = 2_000 } = {}) => {
  const rec = recorder('graphql-sse');
  const sse = resumingSseClient(httpUrl, key, () => rec.after, retryCapMs);
  const stop = sse.subscribe(
    { query: DOCUMENT },
    { next: (result) => rec.onResult(result as Result), error: (error) => rec.onEnd(error), complete: () => rec.onEnd('complete') },
  );
  rec.close = () => {
    stop();
    disposeQuietly(sse);
  };
  return rec;
};

/**
 * The EventSource API (the `eventsource` package, as in a browser): it
 * reconnects by itself, also after a refused connection, and sends the last
 * `id:` back as Last-Event-ID. Only the key is added (a browser's own
 * EventSource cannot send it).
 */
export const eventSourceRecipe: Recipe = (httpUrl, key) => {
  const rec = recorder('EventSource');
  const source = new EventSource(`${httpUrl}/graphql?query=${encodeURIComponent(DOCUMENT)}`, {
    fetch: (input, init) => fetch(input, { ...init, headers: { ...init.headers, Authorization: key } }),
  });
  source.addEventListener('next', (event) => rec.onResult(JSON.parse(event.data) as Result));
  source.addEventListener('complete', () => {
    rec.onEnd('complete');
    source.close();
  });
  rec.close = () => source.close();
  return rec;
};

/**
 * The browser recipes (test/fixtures/browser-resume.ts) in Chromium, on a page
 * of the gateway's origin (its /healthz, so no CORS is involved): graphql-ws
 * over the browser's WebSocket and graphql-sse over its fetch. The page
 * outlives the gateway's restarts; its results are recorded here.
 */
export async function browserRecipes(httpUrl: string, key: string): Promise<{ clients: RecordingClient[]; close(): Promise<void> }> {
  const bundled = await build({
    entryPoints: [new URL('../fixtures/browser-resume.ts', import.meta.url).pathname],
    bundle: true,
    write: false,
    format: 'iife',
    platform: 'browser',
    logLevel: 'silent',
  });
  const browser = await launchChromium();
  try {
    const context = await browser.newContext({ bypassCSP: true });
    const page = await context.newPage();
    const clients = new Map<string, ReturnType<typeof recorder>>();
    for (const name of ['browser graphql-ws', 'browser graphql-sse']) clients.set(name, recorder(name));
    await page.exposeFunction('record', (name: string, eventId: string | null, status: string | null, ended?: string) => {
      const rec = clients.get(name)!;
      if (ended !== undefined) rec.onEnd(ended === 'complete' ? 'complete' : new Error(ended));
      else if (eventId !== null && status !== null) rec.onResult({ data: { transactionUpdated: { eventId, status } } });
    });
    await page.goto(`${httpUrl}/healthz`);
    await page.addScriptTag({ content: bundled.outputFiles[0]!.text });
    await page.evaluate(
      ([url, apiKey]) =>
        (globalThis as unknown as { startResumeRecipes(url: string, key: string): void }).startResumeRecipes(url!, apiKey!),
      [httpUrl, key],
    );
    return { clients: [...clients.values()], close: () => browser.close() };
  } catch (error) {
    await browser.close();
    throw error;
  }
}
