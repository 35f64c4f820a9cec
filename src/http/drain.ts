import type { Server } from 'node:http';
import { Server as NetServer } from 'node:net';

export interface DrainOptions {
  server: Server;
  /** Longest to wait for in-flight requests before closing their connections. */
  timeoutMs: number;
  /** How long to go on serving as usual first, readiness saying 503, so load balancers move away. */
  graceMs: number;
  /** Called once no new connection is accepted: from then on every answer says `Connection: close`. */
  onStopAccepting(): void;
  /** Requests in flight that are not subscription streams. */
  inFlight(): number;
  /** Ends long-lived responses (subscriptions) once what they hold is delivered, within `remainingMs`. */
  endStreams(remainingMs: number): Promise<unknown>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const openConnections = (server: Server) => new Promise<number>((resolve) => server.getConnections((_error, count) => resolve(count ?? 0)));

/**
 * A shutdown that drops no request:
 * 1. for a grace period, serve as usual (readiness already says 503), so load
 *    balancers move away;
 * 2. stop accepting: new connections are refused outright, which a client can
 *    tell from a dropped one. `net.Server#close` is used on purpose: the http
 *    one also closes idle keep-alive connections, and a client may be sending
 *    on one at that moment;
 * 3. answer every request still arriving on open connections, each with
 *    `Connection: close`, so its client opens no further request there;
 * 4. wait for in-flight requests, so every webhook answered 200 is logged;
 * 5. end subscription streams once they delivered what they hold, so that
 *    their clients reconnect (elsewhere, or here after the restart) and resume;
 * 6. wait for the remaining connections to end; past the deadline, close them.
 */
export async function drain({ server, timeoutMs, graceMs, onStopAccepting, inFlight, endStreams }: DrainOptions): Promise<void> {
  const started = Date.now();
  const remaining = () => Math.max(0, timeoutMs - (Date.now() - started));
  while (Date.now() - started < Math.min(graceMs, timeoutMs) && (await openConnections(server)) > 0) await sleep(20);

  const closed = new Promise<void>((resolve) => NetServer.prototype.close.call(server, () => resolve()));
  onStopAccepting();
  while (inFlight() > 0 && remaining() > 0) await sleep(10);
  await endStreams(remaining());

  // Connections that got a `Connection: close` answer close themselves; idle ones left go after a beat.
  await sleep(Math.min(200, remaining()));
  const sweep = setInterval(() => server.closeIdleConnections(), 50);
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), remaining())));
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
