import { setTimeout as sleep } from 'node:timers/promises';
import type { Server } from 'node:http';
import { Server as NetServer } from 'node:net';

export interface DrainOptions {
  server: Server;
  /** Longest to wait for in-flight requests before closing their connections. */
  timeoutMs: number;
  /** Called once no new connection is accepted: from then on every answer says `Connection: close`. */
  onStopAccepting(): void;
  /** Requests in flight that are not subscription streams. */
  inFlight(): number;
  /** Ends long-lived responses (subscriptions) once what they hold is delivered, within `remainingMs`. */
  endStreams(remainingMs: number): Promise<unknown>;
}

/**
 * A shutdown that drops no request, once the grace period is over
 * (shutdown.ts):
 * 1. stop accepting: new connections are refused outright, which a client can
 *    tell from a dropped one. `net.Server#close` is used on purpose: the http
 *    one also closes idle keep-alive connections, and a client may be sending
 *    on one at that moment;
 * 2. answer every request still arriving on open connections, each with
 *    `Connection: close`, so its client opens no further request there;
 * 3. wait for in-flight requests, so every webhook answered 200 is logged;
 * 4. end subscription streams once they delivered what they hold, so that
 *    their clients reconnect (elsewhere, or here after the restart) and resume;
 * 5. wait for the remaining connections to end; past the deadline, close them.
 */
export async function drain({ server, timeoutMs, onStopAccepting, inFlight, endStreams }: DrainOptions): Promise<void> {
  const started = Date.now();
  const remaining = () => Math.max(0, timeoutMs - (Date.now() - started));

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
