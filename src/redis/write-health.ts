import type { Cluster, Redis } from 'ioredis';
import type { Logger } from '../logging/logger.js';
import { redisProblem } from './redis-problem.js';

/*
 * Whether this instance can write the event log now, judged by writes: a
 * connection that is up says nothing of a cluster whose master for the log's
 * slot just died, of a Sentinel group mid-failover, or of a server that has
 * become a read-only replica. A failed write (the log's append, or the probe
 * below) makes the instance unwritable; the next write that succeeds makes it
 * writable again. A probe (one SET on the log's slot) runs at once on every
 * (re)connection and then every `everyMs` when no append succeeded meanwhile,
 * so readiness recovers without traffic (a load balancer sends none to an
 * instance that says 503) and notices a lost master on an idle instance.
 */

export interface WriteHealthOptions {
  /** A key in the event log's slot (redis-keys.ts `writeProbe`). */
  probeKey: string;
  /** How often writability is asked when nothing else wrote. */
  everyMs: number;
  /** Told once when writes start failing, and once when they succeed again. */
  logger?: Logger | undefined;
}

export interface WriteHealth {
  /** Whether the last write to the event log's slot succeeded (false until one has). */
  writable(): boolean;
  /** Why the last write failed, when one did. */
  problem(): string | undefined;
  /** A write to the event log's slot succeeded (`true`) or failed (its error). */
  noteWrite(outcome: true | { error: unknown }): void;
  /** Resolves true once writable, false after `timeoutMs`. */
  whenWritable(timeoutMs: number): Promise<boolean>;
  close(): void;
}

export function createWriteHealth(commands: Redis | Cluster, options: WriteHealthOptions): WriteHealth {
  let writable = false;
  /** Whether writes were ever possible: the first failures at start are not news. */
  let wasWritable = false;
  let lastSuccess = 0;
  let probing = false;
  let closed = false;
  /** Why the last write failed, in an operator's words (redis-problem.ts). */
  let problem: string | undefined;
  const waiters = new Set<(answer: boolean) => void>();

  function noteWrite(outcome: true | { error: unknown }): void {
    if (outcome === true) {
      lastSuccess = Date.now();
      if (!writable && wasWritable) options.logger?.info("Redis takes the event log's writes again");
      writable = true;
      wasWritable = true;
      for (const wake of waiters) wake(true);
      return;
    }
    problem = redisProblem(outcome.error);
    if (writable)
      options.logger?.warn(
        { reason: problem },
        "Redis cannot take the event log's writes now; until it can, webhooks get 503 and readiness says 503",
      );
    writable = false;
  }

  function probe(): void {
    if (probing || closed) return;
    probing = true;
    commands
      .set(options.probeKey, String(Date.now()), 'PX', Math.max(options.everyMs * 10, 10_000))
      .then(
        () => noteWrite(true),
        (error: unknown) => noteWrite({ error }),
      )
      .finally(() => (probing = false));
  }

  const timer = setInterval(() => {
    if (!writable || Date.now() - lastSuccess >= options.everyMs) probe();
  }, options.everyMs);
  timer.unref();
  const onReady = () => probe();
  const onClose = () => noteWrite({ error: new Error('the connection to Redis closed') });
  commands.on('ready', onReady);
  commands.on('close', onClose);
  if (commands.status === 'ready') probe();

  return {
    writable: () => writable,
    problem: () => problem,
    noteWrite,
    whenWritable: (timeoutMs) =>
      new Promise((resolve) => {
        if (writable) return resolve(true);
        const done = (answer: boolean) => {
          clearTimeout(timeout);
          waiters.delete(done);
          resolve(answer);
        };
        const timeout = setTimeout(() => done(false), timeoutMs);
        waiters.add(done);
      }),
    close() {
      closed = true;
      clearInterval(timer);
      commands.off('ready', onReady);
      commands.off('close', onClose);
      for (const wake of waiters) wake(false);
    },
  };
}
