import type { AccountAccess } from '../auth/account-access.js';
import { admitted, type Authenticator } from '../auth/authenticator.js';
import type { RateLimiter } from '../http/rate-limit.js';
import type { Caller } from '../backends/caller.js';
import { newUpstreamBudget, type Backend, type CallScope, type Credential } from '../backends/backend.js';
import type { BatchingConfig, Config } from '../config/config.js';
import type { EventBus } from '../events/event-bus.js';
import type { VendingStates } from '../events/vending-states.js';
import type { EventTransactions } from '../events/event-transactions.js';
import { createLoaders, type Loaders } from './loaders.js';
import { createHistoryReader, type HistoryReader } from '../history/history-reader.js';
import type { HistoryStore } from '../history/history-store.js';

/** What resolvers read as it is, the same for every request: each operation's context holds these, unchanged. */
export interface OperationServices {
  backend: Backend;
  productsValues: Config['productsValues'];
  bus: EventBus;
  eventTransactions: EventTransactions;
  /** Which account's transactions a credential may receive (live events, history, statistics). */
  accountAccess: AccountAccess;
  /** DEFAULT_CURRENCY: the currency of a transaction that names none, directly or through its vending. */
  defaultCurrency: string;
  /** The machines' changes (`vendingUpdated`). */
  vendingBus: EventBus;
  /** Since when each machine is offline, as the machines' log said. */
  vendingStates: VendingStates;
}

/** What every request may use; built once by the GraphQL plugin. An operation's context is made from it (`contextOf`). */
export interface GatewayServices extends OperationServices {
  authenticator: Authenticator;
  rateLimiter: RateLimiter;
  batching: BatchingConfig;
  /** Upstream calls one operation may start when no HTTP request's scope counts them (WebSocket). */
  upstreamCallsPerRequest: number;
  /** The transaction history; undefined when HISTORY=off. */
  history: HistoryStore | undefined;
}

/** The per-request context of GraphQL resolvers (and of each subscription): the services, and the request's own. */
export interface GatewayContext extends OperationServices {
  requestId: string;
  credential: Credential;
  /** The HTTP request's scope, passed with backend calls made outside the loaders; over WebSocket, the operation's own. */
  scope: CallScope;
  loaders: Loaders;
  /**
   * The history as this operation reads it: the account its caller may read (records batched per operation); undefined when HISTORY=off.
   */
  history: HistoryReader | undefined;
  /**
   * The resume point the client's connection carries, for subscriptions that give no `after` of their own:
   * SSE's `Last-Event-ID` header, or graphql-ws's `connectionParams.after`. Clients that rebuild
   * subscriptions from copies of their variables (Apollo's and urql's links) can only resume through it.
   * Not yet judged: anything but text is refused where it is read.
   */
  connectionAfter: unknown;
  /** The event a subscription is answering right now, so its result can name it (and SSE its position). */
  currentEvent: {
    eventId: string | undefined;
    position: string | undefined;
    /** The trace context the event carries (tracing on where it was published), and when its delivery began (epoch ms). */
    traceContext?: Record<string, string> | undefined;
    deliveryStartedAt?: number | undefined;
  };
}

/** What a request or WebSocket operation brings to its context. */
export interface RequestFacts {
  authorization: string | null | undefined;
  requestId: string;
  /** The connection's resume point (see `GatewayContext.connectionAfter`), as the client sent it. */
  connectionAfter?: unknown;
  /** The HTTP request's scope (where its upstream calls are counted); none over WebSocket. */
  scope?: CallScope | undefined;
  /** A WebSocket query's or mutation's: its connection, gone when its socket closes. */
  caller?: Caller | undefined;
  /** Set when the front door already authenticated and rate limited the request. */
  credential?: Credential | undefined;
}

/**
 * Authenticates unless the front door did (throws `UNAUTHENTICATED`; in forward mode the upstream is
 * asked, see src/auth/upstream-key-check.ts), counts the request against its
 * key's rate limit (throws `RATE_LIMITED`) and builds fresh loaders for it.
 * Made at once when the front door already admitted the request: envelop
 * then goes on without waiting for a promise.
 */
export function createContext(services: GatewayServices, facts: RequestFacts): GatewayContext | Promise<GatewayContext> {
  if (facts.credential) return contextOf(services, facts, facts.credential);
  return admitted(services.authenticator, (credential) => services.rateLimiter.admit(credential), facts.authorization).then((credential) =>
    contextOf(services, facts, credential),
  );
}

function contextOf(services: GatewayServices, facts: RequestFacts, credential: Credential): GatewayContext {
  // A WebSocket operation has no HTTP request: it gets a scope of its own (its budget, its connection as caller).
  const scope: CallScope = facts.scope ?? {
    id: facts.requestId,
    tally: { upstreamCalls: 0, upstreamMs: 0 },
    upstreamBudget: newUpstreamBudget(services.upstreamCallsPerRequest),
    caller: facts.caller,
  };
  return {
    // The services as they are (those only the context's making uses come along unread), then the request's own.
    ...services,
    requestId: facts.requestId,
    connectionAfter: facts.connectionAfter === null || facts.connectionAfter === '' ? undefined : facts.connectionAfter,
    currentEvent: { eventId: undefined, position: undefined, traceContext: undefined, deliveryStartedAt: undefined },
    credential,
    scope,
    loaders: createLoaders(services.backend, credential, services.batching, scope),
    history: services.history && createHistoryReader(services.history, credential, services.accountAccess),
  };
}
