import type { ExecutionResult } from 'graphql';

/*
 * "Execute once per event": WebSocket subscribers with the same document,
 * variables and key join one group, which runs one subscription; each event
 * is executed once and the same result goes to every member. A group ends
 * when its last member leaves.
 */

type Source = AsyncIterator<ExecutionResult>;

/**
 * Members served before the fan-out yields to the event loop: sending to
 * thousands of sockets in one go would make webhooks (and every other
 * request) wait for all of it.
 */
const MEMBERS_PER_TURN = 100;
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Writes one serialised result to a member's client; the result is serialised once per event for all. */
export type DirectSend = (resultJson: string) => void;

interface Member {
  /** When set, results go straight to the client and the iterator only reports the end. */
  send: DirectSend | undefined;
  queue: ExecutionResult[];
  waiting: { resolve(result: IteratorResult<ExecutionResult>): void; reject(error: unknown): void } | undefined;
  done: boolean;
  /** Why its source failed (e.g. a replay that no longer reaches its position): the member's iterator throws it. */
  failure?: unknown;
}

interface Group {
  members: Set<Member>;
  source: Source;
}

export interface SharedSubscriptions {
  /** A member iterator of the group `key`, starting the group with `start()` when there is none. */
  join(
    key: string,
    start: () => Promise<AsyncIterable<ExecutionResult> | ExecutionResult>,
    send?: DirectSend,
  ): Promise<AsyncIterableIterator<ExecutionResult> | ExecutionResult>;
  groups(): number;
  members(): number;
}

export function createSharedSubscriptions(): SharedSubscriptions {
  const groups = new Map<string, Group>();
  let memberCount = 0;

  function deliver(member: Member, result: IteratorResult<ExecutionResult>): void {
    if (member.waiting) {
      const { resolve, reject } = member.waiting;
      member.waiting = undefined;
      const failure = result.done ? member.failure : undefined;
      member.failure = undefined;
      if (failure !== undefined) reject(failure);
      else resolve(result);
    } else if (!result.done) member.queue.push(result.value);
  }

  async function pump(key: string, group: Group): Promise<void> {
    try {
      for (let next = await group.source.next(); !next.done; next = await group.source.next()) {
        let served = 0;
        let json: string | undefined;
        for (const member of [...group.members]) {
          if (member.done) continue;
          if (member.send) member.send((json ??= JSON.stringify(next.value)));
          else deliver(member, next);
          if (++served % MEMBERS_PER_TURN === 0) await nextTurn();
        }
      }
    } catch (error) {
      // The members' transport reports it (graphql-ws: an `error` message), not an unhandled rejection.
      for (const member of group.members) member.failure = error;
    } finally {
      if (groups.get(key) === group) groups.delete(key);
      for (const member of group.members) end(member);
      group.members.clear();
    }
  }

  function end(member: Member): void {
    if (member.done) return;
    member.done = true;
    memberCount -= 1;
    deliver(member, { done: true, value: undefined });
  }

  function memberOf(key: string, group: Group, send: DirectSend | undefined): AsyncIterableIterator<ExecutionResult> {
    const member: Member = { send, queue: [], waiting: undefined, done: false };
    group.members.add(member);
    memberCount += 1;
    const iterator: AsyncIterableIterator<ExecutionResult> = {
      next() {
        const queued = member.queue.shift();
        if (queued) return Promise.resolve({ done: false, value: queued });
        if (member.failure !== undefined) {
          const failure: unknown = member.failure;
          member.failure = undefined;
          return Promise.reject(failure);
        }
        if (member.done) return Promise.resolve({ done: true, value: undefined });
        return new Promise((resolve, reject) => (member.waiting = { resolve, reject }));
      },
      async return() {
        group.members.delete(member);
        end(member);
        if (group.members.size === 0 && groups.get(key) === group) {
          groups.delete(key);
          await group.source.return?.();
        }
        return { done: true, value: undefined };
      },
      [Symbol.asyncIterator]: () => iterator,
    };
    return iterator;
  }

  return {
    async join(key, start, send) {
      const existing = groups.get(key);
      if (existing) return memberOf(key, existing, send);
      const started = await start();
      // A subscription that could not start (an error result) is nobody's to share.
      if (!(Symbol.asyncIterator in Object(started))) return started as ExecutionResult;
      const raced = groups.get(key);
      if (raced) {
        await (started as AsyncIterable<ExecutionResult>)[Symbol.asyncIterator]().return?.();
        return memberOf(key, raced, send);
      }
      const group: Group = { members: new Set(), source: (started as AsyncIterable<ExecutionResult>)[Symbol.asyncIterator]() };
      groups.set(key, group);
      const member = memberOf(key, group, send);
      void pump(key, group);
      return member;
    },
    groups: () => groups.size,
    members: () => memberCount,
  };
}
