import { createCipheriv, createDecipheriv, hash, randomBytes } from 'node:crypto';
import type { Credential } from '../backends/backend.js';
import type { Permission } from '../config/config.js';
import { refuse } from '../refusals/refusals.js';
import { requirePermission } from './permissions.js';

/*
 * Subscription tokens: what lets a browser's own EventSource, which cannot
 * send `Authorization`, start an SSE subscription without a long-lived key
 * in its URL. A page asks for one with its key (POST /subscription-tokens)
 * and puts it in the stream's URL (`?token=`). A token is
 *   - good once: the stream it starts takes it (an EventSource that
 *     reconnects by itself is refused, and the page asks for a new one);
 *   - good briefly (`ttlMs`), for SSE subscriptions only: the identity it
 *     stands for keeps only `subscribe`, so a query or a mutation with it is
 *     refused, and only the SSE route reads it from a URL;
 *   - the asking key's stand-in: its identity and account, and its
 *     `Authorization` (forward mode forwards it; a revoked key ends the stream).
 *
 * Tokens are random, not signed: the gateway keeps what each stands for in a
 * store (this process's memory, or Redis, shared by every instance, so a token
 * minted on one instance starts a stream on any), under the token's digest and
 * encrypted with a key derived from the token. Whoever reads the store learns
 * neither tokens nor keys, and no secret has to be shared between instances.
 */

/** Where minted tokens wait for their stream; `take` is atomic (Redis GETDEL): a token starts one stream only. */
export interface TokenStore {
  put(id: string, value: string, ttlMs: number): Promise<void>;
  take(id: string): Promise<string | undefined>;
}

export interface SubscriptionTokens {
  /** A token for `credential`, which must hold `subscribe` (FORBIDDEN otherwise). */
  mint(credential: Credential): Promise<{ token: string; expiresAt: number }>;
  /** The credential the token stands for, with `subscribe` only; UNAUTHENTICATED when unknown, used or expired. */
  redeem(token: string): Promise<Credential>;
}

export interface SubscriptionTokensOptions {
  store: TokenStore;
  /** How long a token may wait for its stream. */
  ttlMs: number;
  /** Prepended to each token's store id (the deployment's Redis prefix). @default '' */
  prefix?: string;
}

const PREFIX = 'vgst_';
const SHAPE = /^vgst_[\w-]{43}$/;
const SUBSCRIBE_ONLY: ReadonlySet<Permission> = new Set(['subscribe']);

/** What a token stands for, as stored (encrypted). */
interface Held {
  authorization: string;
  id: string;
  account?: string | undefined;
  expiresAt?: number | undefined;
}

const keyOf = (token: string) => hash('sha256', `key:${token}`, 'buffer');

function seal(token: string, held: Held): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', keyOf(token), iv);
  const sealed = Buffer.concat([cipher.update(JSON.stringify(held), 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString('base64');
}

function open(token: string, value: string): Held | undefined {
  try {
    const bytes = Buffer.from(value, 'base64');
    const decipher = createDecipheriv('aes-256-gcm', keyOf(token), bytes.subarray(0, 12));
    decipher.setAuthTag(bytes.subarray(12, 28));
    return JSON.parse(Buffer.concat([decipher.update(bytes.subarray(28)), decipher.final()]).toString('utf8')) as Held;
  } catch {
    return undefined;
  }
}

export function createSubscriptionTokens({ store, ttlMs, prefix = '' }: SubscriptionTokensOptions): SubscriptionTokens {
  const idOf = (token: string) => `${prefix}subscription-token:${hash('sha256', `id:${token}`, 'hex')}`;
  return {
    async mint(credential) {
      requirePermission(credential, 'subscribe');
      const { identity } = credential;
      const token = PREFIX + randomBytes(32).toString('base64url');
      const held: Held = {
        authorization: credential.authorization,
        id: identity.id,
        account: identity.account,
        expiresAt: identity.expiresAt,
      };
      await store.put(idOf(token), seal(token, held), ttlMs).catch((error: unknown) => {
        throw refuse.tokenStoreAway(error);
      });
      // A token outlives no JWT it was minted with.
      return { token, expiresAt: Math.min(Date.now() + ttlMs, identity.expiresAt ?? Number.POSITIVE_INFINITY) };
    },
    async redeem(token) {
      if (!SHAPE.test(token)) throw refuse.subscriptionTokenRefused();
      const value = await store.take(idOf(token)).catch((error: unknown) => {
        throw refuse.tokenStoreAway(error);
      });
      const held = value === undefined ? undefined : open(token, value);
      if (!held || (held.expiresAt !== undefined && held.expiresAt <= Date.now())) throw refuse.subscriptionTokenRefused();
      const identity = {
        id: held.id,
        permissions: SUBSCRIBE_ONLY,
        expiresAt: held.expiresAt,
        ...(held.account === undefined ? {} : { account: held.account }),
      };
      return { authorization: held.authorization, identity };
    },
  };
}

/** Most tokens one process holds at once; past it the oldest is forgotten (its page asks again). */
const MAX_HELD = 10_000;

/** The store of one instance: a token minted here starts a stream here only. */
export function memoryTokenStore(now: () => number = Date.now): TokenStore {
  // Map order is insertion order, and every token lives as long: the first entry expires first.
  const held = new Map<string, { value: string; until: number }>();
  return {
    async put(id, value, ttlMs) {
      for (const [each, entry] of held) {
        if (entry.until > now() && held.size < MAX_HELD) break;
        held.delete(each);
      }
      held.set(id, { value, until: now() + ttlMs });
    },
    async take(id) {
      const entry = held.get(id);
      held.delete(id);
      return entry && entry.until > now() ? entry.value : undefined;
    },
  };
}

/** What the guard reads of a request. */
interface TokenRequest {
  method: string;
  url: string;
  headers: Record<string, string | string[] | undefined>;
}

/**
 * The `token` of a request that may start a stream with one: a GET asking for
 * SSE (`Accept: text/event-stream`, as EventSource sends it) with no
 * `Authorization`. Any other request (a POST, a JSON GET, one with a key) is
 * judged by its key alone, whatever its URL holds.
 */
export function streamTokenOf(request: TokenRequest): string | undefined {
  if (request.method !== 'GET' || request.headers.authorization !== undefined) return undefined;
  const accept = request.headers.accept;
  if (typeof accept !== 'string' || !accept.includes('text/event-stream')) return undefined;
  const search = request.url.indexOf('?');
  if (search < 0) return undefined;
  return new URLSearchParams(request.url.slice(search + 1)).get('token') ?? undefined;
}
