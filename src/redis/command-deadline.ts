import type { Cluster, Command, Redis } from 'ioredis';

/*
 * A late event loop is not a dead Redis. Node runs the timers that are due
 * before it reads the sockets (the timers phase comes before the poll phase).
 * So after the loop was busy for longer than a bound (CPU contention, a long
 * callback, a paused process), a plain timer, such as ioredis' own
 * `commandTimeout` and `socketTimeout`, declares a command timed out while
 * Redis's answer sits unread in the socket. Here a command has timed out only
 * when Redis truly did not answer within the bound:
 *
 * - the bound is counted from when the command was sent (written to the
 *   socket, or queued while the connection is made);
 * - when the timer fires, the decision waits for the poll phase that follows
 *   (setImmediate), so an answer that arrived meanwhile is read first;
 * - a timer that fired well past its time says the loop was away around the
 *   deadline (so possibly Redis too, sharing the starved machine, or the
 *   command's bytes, stuck in the process): the decision waits again as long
 *   as the loop was away, at most one more bound in all, so a Redis that truly
 *   stopped is still named within about twice the bound.
 */

export interface Deadline {
  cancel(): void;
}

/** A timer later than this share of the bound says the loop was away around the deadline. */
const LATE_SHARE = 0.1;

/**
 * Calls `expire` once `boundMs` have passed and `answered()` still says no,
 * judged only after the loop has read what arrived meanwhile (see above).
 */
export function startDeadline(boundMs: number, answered: () => boolean, expire: () => void): Deadline {
  let graceLeftMs = boundMs;
  let timer: NodeJS.Timeout | undefined;
  let immediate: NodeJS.Immediate | undefined;
  const arm = (waitMs: number): void => {
    const due = performance.now() + waitMs;
    // Unref'd: a command's deadline never keeps a stopping process alive (the connection does while it is open).
    timer = setTimeout(() => fired(due), waitMs).unref();
  };
  const fired = (due: number): void => {
    timer = undefined;
    if (answered()) return;
    const lateMs = performance.now() - due;
    // Not unref'd: a pending immediate makes that poll phase look without waiting; an unref'd one waits for the next I/O or timer.
    immediate = setImmediate(() => decide(lateMs));
  };
  const decide = (lateMs: number): void => {
    immediate = undefined;
    if (answered()) return;
    if (lateMs > boundMs * LATE_SHARE && graceLeftMs > 0) {
      const graceMs = Math.min(lateMs, graceLeftMs);
      graceLeftMs -= graceMs;
      return arm(graceMs);
    }
    expire();
  };
  arm(boundMs);
  return {
    cancel() {
      clearTimeout(timer);
      if (immediate) clearImmediate(immediate);
    },
  };
}

/** Where a command was last handed to a socket, and what that socket had read by then. */
interface Written {
  connection: Redis;
  stream: Redis['stream'];
  bytesRead: number;
}

/**
 * One deadline per command, however many connections it is sent on (a Cluster redirects): counted from when it was first sent, as ioredis'
 * own timer is.
 */
const pending = new WeakMap<Command, { written: Written | undefined }>();
const bounded = new WeakSet<Redis>();

/**
 * Bounds every command sent on `connection`: one that Redis does not answer within
 * `boundMs` (judged as startDeadline does) is rejected ("Command timed out"),
 * and when the socket it was written to has read nothing since, Redis is not
 * answering on that connection: the socket is destroyed, so the connection
 * reads as down (not ready, commands refused at once) and reconnects, as
 * ioredis' `socketTimeout` would. Replaces `commandTimeout` and
 * `socketTimeout`, which must then be left unset.
 *
 * ioredis has no hook per command, so the connection's own `sendCommand` is
 * wrapped, once, on this instance only: every command passes there, pipelines
 * and transactions included, and a Cluster routes each command to a node
 * connection's `sendCommand` (bound when the Cluster announces it, `+node`).
 */
export function boundCommands(connection: Redis, boundMs: number): void {
  if (bounded.has(connection)) return;
  bounded.add(connection);
  const send = connection.sendCommand;
  connection.sendCommand = function sendBounded(this: Redis, command: Command, ...rest: unknown[]) {
    const sent = (send as (command: Command, ...rest: unknown[]) => unknown).apply(this, [command, ...rest]);
    const { stream, status } = connection;
    const handedOver = (status === 'ready' || status === 'connect') && stream !== undefined && !stream.destroyed;
    const written = handedOver ? { connection, stream, bytesRead: stream.bytesRead } : undefined;
    const known = pending.get(command);
    if (known) {
      // Sent again (from the offline queue once connected, or redirected): its answer is awaited on this socket now.
      known.written = written ?? known.written;
      return sent;
    }
    // Neither written nor queued: refused at once (no offline queue), nothing to wait for.
    if (!handedOver && connection.options.enableOfflineQueue === false) return sent;
    const entry = { written };
    pending.set(command, entry);
    startDeadline(
      boundMs,
      () => command.isResolved,
      () => expire(command, entry.written, boundMs),
    );
    return sent;
  };
}

/**
 * Bounds the commands of every node connection of `cluster`, those it holds
 * and those it makes later (ioredis announces each with `+node`): a Cluster
 * sends each command on one of them.
 */
export function boundClusterCommands(cluster: Cluster, boundMs: number): void {
  for (const node of cluster.nodes('all')) boundCommands(node, boundMs);
  cluster.on('+node', (node: Redis) => boundCommands(node, boundMs));
}

function expire(command: Command, written: Written | undefined, boundMs: number): void {
  // A command already settled otherwise (an error answer, a closed connection) ignores this.
  command.reject(new Error('Command timed out'));
  if (!written) return;
  const { connection, stream, bytesRead } = written;
  // Dropped only while an answer is awaited on that very socket and nothing came since: a command refused before it was written (a
  // subscribed connection refuses most) proves no silence.
  if (connection.stream !== stream || stream.destroyed || stream.bytesRead !== bytesRead || connection.commandQueue.length === 0) return;
  stream.destroy(new Error(`Socket timeout: Redis answered nothing in ${boundMs} ms`));
}
