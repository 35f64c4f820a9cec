import type { PaymentUpdate, Transaction, Vending } from '../contract/contract.js';
import { refuse } from '../refusals/refusals.js';
import type { Permission } from '../config/config.js';
import type { Caller } from './caller.js';

/**
 * Who is asking, as rate limits, logs and permission checks know them: an
 * API key by a digest prefix (`key-3f2a…`), a token by its subject. Never
 * the key itself.
 */
export interface Identity {
  /** Short and bounded; safe to log. */
  id: string;
  permissions: ReadonlySet<Permission>;
  /** A token's `exp`, in ms: its subscriptions end then. */
  expiresAt?: number | undefined;
  /**
   * The account the key or token belongs to (an `API_KEYS` entry's `@account`,
   * a token's JWT_ACCOUNT_CLAIM); absent: the default account. A forward-mode
   * key names none: the service says which accounts it may read.
   */
  account?: string | undefined;
}

/** What a client presented; backends that forward credentials send it upstream as is. */
export interface Credential {
  /**
   * The key or token the client presented: its `Authorization` header without the optional `Bearer ` (authenticator.ts
   * strips it, once), so one key is one identity however it was sent.
   */
  authorization: string;
  /**
   * Who presented it: set by the authenticator for a client, SYSTEM_IDENTITY
   * where the gateway acts for itself. Permission checks refuse a credential
   * that lacks one (from JavaScript, or a cast): it may do nothing.
   */
  identity: Identity;
}

/**
 * The gateway acting for itself, not for a client: the demo simulator's
 * reads, the forward-mode key check's probe (made with the key it asks
 * about, before that key has an identity), and the read-back that starts a
 * history record after a payment update (with the caller's key, which the
 * service answers). It may read and nothing more; no client request ever
 * carries it. An event's full transaction is read for each subscriber with
 * the subscriber's own credential.
 */
export const SYSTEM_IDENTITY: Identity = Object.freeze({ id: 'gateway', permissions: new Set<Permission>(['read']) });

/**
 * What a backend call carries of the request it serves (the front door's
 * request scope, or a WebSocket operation's): its id for the log, where its
 * upstream calls are counted, its budget, and its caller. Never part of a
 * sharing or cache key; absent for work that belongs to no request (an
 * event's read, a key check).
 */
export interface CallScope {
  /** The request's id, named in the log lines of its upstream calls. */
  id?: string | undefined;
  tally: UpstreamTally;
  /**
   * Tells when the client that started the request went away: its upstream
   * calls stop (failing as `ClientGone`) and its queued work is dropped.
   */
  caller?: Caller | undefined;
  /** Upstream calls the request may start (UPSTREAM_CALLS_PER_REQUEST); absent: unbounded. */
  upstreamBudget?: UpstreamBudget;
}

/** A request's upstream calls, counted as each starts: a read served by coalescing or the cache starts none. */
export interface UpstreamBudget {
  limit: number;
  started: number;
}

export const newUpstreamBudget = (limit: number): UpstreamBudget => ({ limit, started: 0 });

/**
 * Counts one upstream call against the request's budget, before it starts;
 * once the budget is spent, refuses it (no call is made) with an error that
 * names the limit, on the field that needed the call.
 */
export function spendUpstreamCall(scope: CallScope | undefined): void {
  const budget = scope?.upstreamBudget;
  if (!budget) return;
  if (budget.started >= budget.limit) {
    throw refuse.upstreamCallsSpent(budget.limit);
  }
  budget.started += 1;
}

/** Upstream calls made on behalf of one request. */
export interface UpstreamTally {
  upstreamCalls: number;
  upstreamMs: number;
}

/** Options of the vending reads (contract part 4). */
export interface VendingQuery {
  /** The upstream value of the `products` query parameter, passed as given; absent means not sent. */
  products?: string | undefined;
}

/**
 * The REST contract's four operations. Everything above this interface
 * (GraphQL, REST passthrough, webhook enrichment) is written once against it.
 * Failures are `GatewayError`s: `NOT_FOUND` for an unknown id, `UPSTREAM_*` for
 * a service that misbehaves.
 */
export interface Backend {
  getTransaction(id: string, credential: Credential, scope?: CallScope): Promise<Transaction>;
  getVending(id: string, query: VendingQuery, credential: Credential, scope?: CallScope): Promise<Vending>;
  listVendings(query: VendingQuery, credential: Credential, scope?: CallScope): Promise<Vending[]>;
  /** Answers with the upstream's success body (the contract shows an empty object). */
  updatePayment(id: string, payment: PaymentUpdate, credential: Credential, scope?: CallScope): Promise<Record<string, unknown>>;
  /**
   * Told of a transaction the service reported changed (a webhook), so
   * whatever the backend holds of it is refreshed. `at` is when the change
   * happened: a backend that stores the update ignores one older than what
   * it has (webhooks can arrive out of order). `account` is the account
   * whose path the webhook came in on (contract/accounts.ts). Backends that
   * hold nothing leave it out.
   */
  noteTransactionUpdate?(transaction: Transaction, at?: number, account?: string): void;
  /**
   * For backends that are the service themselves (memory): calls `listener`
   * with each transaction they change, as the service's webhook would.
   * Returns a function that stops the calls.
   */
  watchTransactionChanges?(listener: (transaction: Transaction) => void): () => void;
  /**
   * The transaction as this backend holds it, when it can say so without a
   * call to the service (the memory backend is the service); undefined when it
   * holds none for `account`. Backends that would have to ask leave it out.
   */
  heldTransaction?(id: string, account: string): Transaction | undefined;
  /** Releases connections and timers, ending calls still under way (shutdown waited for them first). */
  close(): Promise<void>;
}
