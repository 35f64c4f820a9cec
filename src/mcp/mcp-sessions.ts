/*
 * The MCP sessions open on this instance: each bound to the identity that
 * initialized it, bounded in number (the least recently used goes first), per
 * identity too (so one key cannot push everyone else's sessions out), and in
 * idle time, all closed when the gateway stops. A Map in insertion order
 * is the recency list: a session used again is moved to its end.
 * Sessions live in process: with several instances, a load balancer must
 * send a session's requests to the instance that holds it (or the client
 * initializes again on the 404 the others answer).
 */

export interface McpSession {
  /** Who initialized it (identity and account): only the same may use it. */
  owner: string;
  lastUsed: number;
  close(): Promise<void>;
}

export interface McpSessionsOptions {
  /** Most sessions open at once. */
  max: number;
  /** Most sessions one owner may hold; past it, that owner's least recently used goes. */
  perOwner: number;
  /** A session unused this long is closed. */
  idleMs: number;
  /** @default Date.now */
  now?: () => number;
}

export interface McpSessions<S extends McpSession> {
  /**
   * The session of this id, marked used now, when `owner` holds it; `undefined` when it is unknown or
   * closed, `'another-owner'` (and left as it was) when someone else holds it.
   */
  use(id: string, owner: string): S | undefined | 'another-owner';
  add(id: string, session: S): void;
  /** Forgets a session (its transport closed). */
  remove(id: string): void;
  /** Closes the sessions idle past `idleMs`; the route's sweep calls it. */
  sweep(): Promise<void>;
  closeAll(): Promise<void>;
  readonly size: number;
}

export function createMcpSessions<S extends McpSession>(options: McpSessionsOptions): McpSessions<S> {
  const now = options.now ?? Date.now;
  const open = new Map<string, S>();
  const closing = (id: string, session: S) => {
    open.delete(id);
    // A transport that fails to close has nothing left to give back: it is forgotten either way.
    return session.close().catch(() => {});
  };
  return {
    use(id, owner) {
      const session = open.get(id);
      if (!session) return undefined;
      if (now() - session.lastUsed >= options.idleMs) {
        void closing(id, session);
        return undefined;
      }
      if (session.owner !== owner) return 'another-owner';
      session.lastUsed = now();
      open.delete(id);
      open.set(id, session);
      return session;
    },
    add(id, session) {
      session.lastUsed = now();
      open.set(id, session);
      // Oldest first: the Map's order.
      const owners = [...open].filter(([, each]) => each.owner === session.owner);
      for (const [oldest, first] of owners.slice(0, Math.max(0, owners.length - options.perOwner))) void closing(oldest, first);
      for (const [oldest, first] of open) {
        if (open.size <= options.max) break;
        void closing(oldest, first);
      }
    },
    remove(id) {
      open.delete(id);
    },
    async sweep() {
      const idle = [...open].filter(([, session]) => now() - session.lastUsed >= options.idleMs);
      await Promise.all(idle.map(([id, session]) => closing(id, session)));
    },
    async closeAll() {
      await Promise.all([...open].map(([id, session]) => closing(id, session)));
    },
    get size() {
      return open.size;
    },
  };
}
