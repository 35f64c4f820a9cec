import { CloseCode } from 'graphql-ws';

/*
 * The WebSocket close codes the gateway sends, each with the reason text sent
 * beside it (a client reads both): the standard ones of RFC 6455 and IANA's
 * registry, and graphql-ws's own (its `CloseCode`, 44xx) where the gateway
 * closes a socket with one. Clients (graphql-ws, Apollo Client, urql)
 * reconnect on the three standard ones. Call sites spread an entry:
 * `socket.close(...WsClose.goingAway)`.
 */
export const WsClose = {
  /** The server stops for good: what is left open when a shutdown's time is up. */
  goingAway: [1001, 'Going away'],
  /** A graceful shutdown: the client reconnects, to another instance or this one restarted. */
  serviceRestart: [1012, 'Service restart'],
  /** Not now: the key cannot be checked at the moment. */
  tryAgainLater: [1013, 'Try Again Later'],
  /** Not now, 1013 too: the socket reads too slowly for what it is sent (it resumes with `after` once reconnected). */
  readingTooSlowly: [1013, 'Reading too slowly'],
  /** graphql-ws's 4500: the socket failed, or handling one of its messages did (what failed is in the log). */
  internalError: [CloseCode.InternalServerError, 'Internal server error'],
} as const satisfies Record<string, readonly [number, string]>;
