import { createClient, type Client, type FormattedExecutionResult } from 'graphql-ws';

type ExecutionResult<T> = FormattedExecutionResult<T, unknown>;
import WebSocket from 'ws';

/*
 * A graphql-ws client whose results queue up, so a test can
 * `await sub.next()` for each event (after graphql-ws's tests/utils/tclient.ts).
 */

export interface QueuedSubscription<T = Record<string, any>> {
  /** Resolves with the next result, or rejects after `timeoutMs`. */
  next(timeoutMs?: number): Promise<ExecutionResult<T>>;
  /** Every result received so far. */
  received: ExecutionResult<T>[];
  /** Set when the server completed or failed the subscription. */
  ended: Promise<unknown>;
  unsubscribe(): void;
}

export function wsClient(httpUrl: string, key: string | undefined): Client {
  return createClient({
    url: `${httpUrl.replace(/^http/, 'ws')}/graphql`,
    webSocketImpl: WebSocket,
    connectionParams: key === undefined ? {} : { Authorization: key },
    retryAttempts: 0,
    lazy: true,
  });
}

export function subscribe<T = Record<string, any>>(
  client: Client,
  query: string,
  variables?: Record<string, unknown>,
): QueuedSubscription<T> {
  const received: ExecutionResult<T>[] = [];
  const waiters: Array<(result: ExecutionResult<T>) => void> = [];
  let read = 0;
  let settle: (value: unknown) => void = () => {};
  const ended = new Promise((resolve) => (settle = resolve));
  const unsubscribe = client.subscribe<T>(
    { query, variables },
    {
      next: (result) => {
        received.push(result);
        waiters.shift()?.(result);
      },
      error: (error) => settle(error),
      complete: () => settle('complete'),
    },
  );
  return {
    received,
    ended,
    unsubscribe,
    next(timeoutMs = 2_000) {
      const index = read++;
      if (index < received.length) return Promise.resolve(received[index]!);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no result #${index + 1} within ${timeoutMs} ms`)), timeoutMs);
        waiters.push((result) => {
          clearTimeout(timer);
          resolve(result);
        });
      });
    },
  };
}
