import type { Server } from 'node:http';

export interface DrainOptions {
  server: Server;
  /** Longest to wait for in-flight requests before closing their connections. */
  timeoutMs: number;
  /** Requests in flight that are not subscription streams. */
  inFlight(): number;
  /** Ends long-lived responses (subscriptions) once what they hold is delivered. */
  endStreams(): Promise<unknown>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Stops accepting connections and closes idle keep-alive ones; waits for
 * in-flight requests (their answers carry `Connection: close`), so every
 * webhook accepted is in the event log; then ends subscription streams after
 * they delivered it; whatever is still open at the deadline is closed.
 */
export async function drain({ server, timeoutMs, inFlight, endStreams }: DrainOptions): Promise<void> {
  const started = Date.now();
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  // Connections that finish a request while closing go idle: close those as they come.
  const sweep = setInterval(() => server.closeIdleConnections(), 50);
  while (inFlight() > 0 && Date.now() - started < timeoutMs) await sleep(10);
  await endStreams();
  let timer: NodeJS.Timeout | undefined;
  const left = Math.max(0, timeoutMs - (Date.now() - started));
  const deadline = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), left)));
  try {
    if ((await Promise.race([closed, deadline])) === 'late') {
      server.closeAllConnections();
      await closed;
    }
  } finally {
    clearTimeout(timer);
    clearInterval(sweep);
  }
}
