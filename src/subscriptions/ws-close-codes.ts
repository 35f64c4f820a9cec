/*
 * The WebSocket close codes the gateway sends besides graphql-ws's own
 * (its `CloseCode`, 44xx): the standard ones of RFC 6455 and IANA's registry,
 * each with the reason text sent beside it. Clients (graphql-ws, Apollo
 * Client, urql) reconnect on all three.
 */
export const WsClose = {
  /** The server stops for good: what is left open when a shutdown's time is up. */
  goingAway: [1001, 'Going away'],
  /** A graceful shutdown: the client reconnects, to another instance or this one restarted. */
  serviceRestart: [1012, 'Service restart'],
  /** Not now: the socket reads too slowly, or the key cannot be checked at the moment. */
  tryAgainLater: [1013, 'Try Again Later'],
} as const satisfies Record<string, readonly [number, string]>;
