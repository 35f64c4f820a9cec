import type { Redis } from 'ioredis';

/*
 * An append confirmed by a replica: a master that fails over to a replica
 * loses what it wrote and had not yet passed on, so while the master has
 * replicas a webhook is answered 200 only once one of them holds its event
 * (WAIT 1 <bound>), and 503 past the bound, so the sender retries: the retry
 * is then appended again where it was lost, and found a redelivery where it
 * was not. Without replicas there is nothing to wait for (WAIT would only
 * spend the bound).
 *
 * WAIT counts the writes of its own connection, so it goes on the connection
 * the appends went on, and it holds that connection until replicas answer:
 * the appends have a connection of their own (redis-clients.ts), so nothing
 * else waits behind it. WAITs of appends made meanwhile are one: a WAIT sent
 * after an append's script covers it, and every append made while one WAIT
 * is out shares the next.
 */

/**
 * How long the master's count of replicas (ROLE) is trusted before it is asked
 * again (ms): a replica that joins is waited for within a second, for one
 * ROLE a second at most, whatever the rate of webhooks.
 */
const ROLE_REFRESH_MS = 1_000;

export interface ReplicaWaitOptions {
  /** Longest wait for a replica (ms); past it the append is not confirmed. */
  boundMs: number;
  /** @default Date.now */
  now?: () => number;
}

/** The master has replicas and none confirmed the append within the bound: the event may be lost in a failover. */
export class ReplicaNotConfirmed extends Error {
  constructor(boundMs: number) {
    super(`no replica confirmed the event within ${boundMs} ms`);
    this.name = 'ReplicaNotConfirmed';
  }
}

export interface ReplicaWait {
  /**
   * Resolves once a replica holds every write sent on the connection so far (at once without replicas); rejects with ReplicaNotConfirmed
   * past the bound.
   */
  confirm(): Promise<void>;
}

export function createReplicaWait(connection: Redis, options: ReplicaWaitOptions): ReplicaWait {
  const now = options.now ?? Date.now;
  let replicas = 0;
  let askedAt = -Infinity;
  let asking: Promise<number> | undefined;
  // A new connection may be to another master (a failover): its replicas are asked again.
  connection.on('ready', () => (askedAt = -Infinity));

  async function replicaCount(): Promise<number> {
    if (now() - askedAt < ROLE_REFRESH_MS) return replicas;
    asking ??= connection
      .role()
      .then((role) => {
        // A master answers ['master', offset, [[ip, port, offset], …]]; anything else has no replicas of its own to wait for.
        replicas = role[0] === 'master' && Array.isArray(role[2]) ? role[2].length : 0;
        askedAt = now();
        return replicas;
      })
      .finally(() => (asking = undefined));
    return asking;
  }

  let out: Promise<number> | undefined;
  let next: Promise<number> | undefined;
  /** A WAIT sent after every write made so far on the connection. */
  function waitOnce(): Promise<number> {
    if (!out) {
      out = connection.wait(1, options.boundMs).finally(() => (out = undefined));
      return out;
    }
    // The WAIT out now may have been sent before this append's write: the next one is sent after it.
    next ??= out
      .catch(() => 0)
      .then(() => {
        next = undefined;
        return waitOnce();
      });
    return next;
  }

  return {
    async confirm() {
      if ((await replicaCount()) === 0) return;
      if ((await waitOnce()) < 1) throw new ReplicaNotConfirmed(options.boundMs);
    },
  };
}
