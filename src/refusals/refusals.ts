import { ClientGone, ErrorCode, GatewayError, quoted } from '../errors.js';

/*
 * Every refusal a client reads as a GatewayError, worded once, grouped by
 * code; call sites pass only what varies (a limit, an id, a library's or a
 * validator's words). Clients and tests match these messages as text: a
 * change of wording here is a change of the gateway's answers. The codes and the GatewayError class are
 * src/errors.ts's; this module stays beside them in layer 0, so its entries
 * take plain values, never types of a higher layer. Nothing else in src/
 * constructs a GatewayError (test/unit/error-codes.test.ts).
 *
 * Beside it, the rest of the catalogue's wording: operation-refusals.ts (the
 * GraphQLErrors that are not GatewayErrors), transport-refusals.ts (the
 * messages of answers a transport words in its own envelope) and
 * ws-close-codes.ts (WebSocket close codes and their reasons). The same test
 * finds a message written as text where it is sent, anywhere else in src/.
 */

const MISSING_KEY = 'Missing API key: send it in the Authorization header';

/** A token refused at the front door; `problem`: what is wrong with it, worded to follow the colon. */
const tokenRefused = (problem: string) =>
  new GatewayError(ErrorCode.UNAUTHENTICATED, `The token was refused: ${problem}`, { failsRequest: true });

export const refuse = {
  // UNAUTHENTICATED
  /** `failsRequest`: at the front door the whole request fails (401); a resolver's permission check fails its field alone. */
  missingKey: (failsRequest: boolean) => new GatewayError(ErrorCode.UNAUTHENTICATED, MISSING_KEY, failsRequest ? { failsRequest } : {}),
  unknownKey: () => new GatewayError(ErrorCode.UNAUTHENTICATED, 'Unknown API key', { failsRequest: true }),
  keyRevoked: () => new GatewayError(ErrorCode.UNAUTHENTICATED, 'The API key was revoked'),
  tokenExpired: () => new GatewayError(ErrorCode.UNAUTHENTICATED, 'The token has expired'),
  // A JWT refused, saying what is wrong with it (jose's finding, in our words), never the token.
  jwtExpired: () => tokenRefused('it has expired'),
  jwtNeverExpires: () => tokenRefused('it carries no "exp" claim, so it would never expire'),
  jwtClaimRefused: (claim: string) => tokenRefused(`its "${claim}" claim is not what this gateway accepts`),
  /** JWT_ACCOUNT_CLAIM set: the claim it names is missing, or names no account. */
  jwtAccountMissing: (claim: string) => tokenRefused(`its "${claim}" claim must name the account it belongs to`),
  jwtAlgorithmRefused: () => tokenRefused('its algorithm is not accepted'),
  jwtKeyUnknown: () => tokenRefused('no key of the key set matches it'),
  jwtSignatureInvalid: () => tokenRefused('its signature does not verify'),
  notAJwt: () => tokenRefused('it is not a valid signed JWT'),
  subscriptionTokenRefused: () =>
    new GatewayError(
      ErrorCode.UNAUTHENTICATED,
      'The subscription token is unknown, used or expired: ask POST /subscription-tokens for a new one',
      { failsRequest: true },
    ),
  metricsTokenMissing: () =>
    new GatewayError(ErrorCode.UNAUTHENTICATED, 'The metrics need their token: send Authorization: Bearer <METRICS_TOKEN>', {
      failsRequest: true,
    }),

  // FORBIDDEN
  lacksPermission: (permission: string) =>
    new GatewayError(ErrorCode.FORBIDDEN, `This API key or token lacks the "${permission}" permission`, { extensions: { permission } }),
  lostSubscribe: () =>
    new GatewayError(ErrorCode.FORBIDDEN, 'This API key lost the "subscribe" permission', { extensions: { permission: 'subscribe' } }),
  /** DNS rebinding (MCP): a `Host` the gateway is not known by. */
  foreignHost: () => new GatewayError(ErrorCode.FORBIDDEN, 'The Host header names no host this gateway serves /mcp as (MCP_ALLOWED_HOSTS)'),
  /** DNS rebinding (MCP): a page of a site the gateway is not known by. */
  foreignOrigin: () => new GatewayError(ErrorCode.FORBIDDEN, 'The Origin header names a site this gateway does not serve /mcp to'),
  keyMovedAccount: () =>
    new GatewayError(ErrorCode.FORBIDDEN, 'This API key now belongs to another account: subscribe again to receive its events'),
  /** `account`: the key's account, undefined for the default one (whose webhooks come to POST /webhooks). */
  historyUnlisted: (account: string | undefined) =>
    new GatewayError(
      ErrorCode.FORBIDDEN,
      `This key's transactions come to ${account === undefined ? 'POST /webhooks' : `POST /webhooks/${account}`}, which may ` +
        `carry several accounts' webhooks (the service judges each key transaction by transaction), so that history is listed and summed ` +
        `for nobody. Have each account send its webhooks to a path of its own, POST /webhooks/{account}.`,
    ),

  // NOT_FOUND
  /** `what`: the resource's name ("vending", "transaction"); `id` is quoted short. */
  notFound: (what: string, id: string) => new GatewayError(ErrorCode.NOT_FOUND, `${what} ${quoted(id)} was not found`),
  /** `problem`: what the id rule found wrong with it. */
  idNamesNothing: (problem: string) => new GatewayError(ErrorCode.NOT_FOUND, `No resource has such an id: an id ${problem}`),

  // BAD_USER_INPUT
  /** `problem`: what a validator found wrong with the argument, worded to follow its name. */
  invalidArgument: (argument: string, problem: string) => new GatewayError(ErrorCode.BAD_USER_INPUT, `${argument} ${problem}`),
  pathIdInvalid: (problem: string) => new GatewayError(ErrorCode.BAD_USER_INPUT, `The id in the path ${problem}`),
  bodyNotJson: () => new GatewayError(ErrorCode.BAD_USER_INPUT, 'Request body must be a JSON object; it is not valid JSON'),
  bodyNotObject: () => new GatewayError(ErrorCode.BAD_USER_INPUT, 'Request body must be a JSON object'),
  bodyTooDeep: (maxDepth: number) => new GatewayError(ErrorCode.BAD_USER_INPUT, `Request body nests deeper than ${maxDepth} levels`),
  firstOutOfRange: (max: number, first: number) =>
    new GatewayError(ErrorCode.BAD_USER_INPUT, `first must be from 0 to ${max}, got ${first}`),
  notAListCursor: (cursor: string) => new GatewayError(ErrorCode.BAD_USER_INPUT, `after is not a cursor of this list: ${quoted(cursor)}`),
  notAHistoryCursor: (cursor: string) =>
    new GatewayError(ErrorCode.BAD_USER_INPUT, `after is not a cursor of recentTransactions: ${quoted(cursor)}`),
  afterNotInList: (after: string) =>
    new GatewayError(ErrorCode.BAD_USER_INPUT, `after names a vending that is not in this list: ${quoted(after)}`),
  /** `where`: the argument, or the connection's parameter, that carried it. */
  lastEventIdNotText: (where: string) => new GatewayError(ErrorCode.BAD_USER_INPUT, `${where} must be text: the last eventId seen`),
  tooManyIds: (max: number, count: number) => new GatewayError(ErrorCode.BAD_USER_INPUT, `ids may hold at most ${max} ids, got ${count}`),
  /** `flat`, `planogram`: the two values `products` may take. */
  productsUnknown: (flat: string, planogram: string, got: unknown) =>
    new GatewayError(
      ErrorCode.BAD_USER_INPUT,
      `products must be ${JSON.stringify(flat)} or ${JSON.stringify(planogram)}, got ${JSON.stringify(got)}`,
    ),
  notADateTime: (argument: string) => new GatewayError(ErrorCode.BAD_USER_INPUT, `${argument} is not a valid date-time`),
  sinceNotBeforeUntil: () => new GatewayError(ErrorCode.BAD_USER_INPUT, 'since must be before until'),
  tooManyStatuses: (max: number, count: number) =>
    new GatewayError(ErrorCode.BAD_USER_INPUT, `status may name at most ${max} statuses, got ${count}`),
  statusTooLong: (status: string) => new GatewayError(ErrorCode.BAD_USER_INPUT, `status ${quoted(status)} is longer than 256 characters`),
  /** `interval`: the interval's GraphQL name (MINUTE, HOUR…). */
  tooManyIntervals: (count: number, interval: string, max: number) =>
    new GatewayError(
      ErrorCode.BAD_USER_INPUT,
      `since–until covers ${count} intervals of ${interval.toLowerCase()}; at most ${max}: narrow the range or widen the interval`,
    ),
  mixedCurrencies: (field: string, currencies: readonly string[]) =>
    new GatewayError(
      ErrorCode.BAD_USER_INPUT,
      `${field} would add amounts of ${currencies.length} currencies (${currencies.join(', ')}); read it per currency under byCurrency`,
    ),
  historyOff: () => new GatewayError(ErrorCode.BAD_USER_INPUT, 'The transaction history is off on this gateway (HISTORY=off)'),
  upstreamCallsSpent: (limit: number) =>
    new GatewayError(
      ErrorCode.BAD_USER_INPUT,
      `This request reached its limit of ${limit} upstream calls (UPSTREAM_CALLS_PER_REQUEST); ask for fewer ids or fields at once`,
      { extensions: { limit: 'UPSTREAM_CALLS_PER_REQUEST' } },
    ),

  // BAD_REQUEST
  queryParamNotJson: (name: string) =>
    new GatewayError(ErrorCode.BAD_REQUEST, `The "${name}" parameter of the query string is not JSON.`, { failsRequest: true }),

  // RATE_LIMITED
  /** `retryAfter`: seconds, as the Retry-After header sends them. */
  rateLimited: (perSecond: number, retryAfter: string) =>
    new GatewayError(ErrorCode.RATE_LIMITED, `Too many requests for this API key: at most ${perSecond} a second`, {
      failsRequest: true,
      headers: { 'retry-after': retryAfter },
    }),
  /** `retryAfter`: seconds, as the Retry-After header sends them. */
  tooManyKeyChecks: (perSecond: number, retryAfter: string) =>
    new GatewayError(ErrorCode.RATE_LIMITED, `Too many API key checks with the service: at most ${perSecond} a second; try again shortly`, {
      failsRequest: true,
      headers: { 'retry-after': retryAfter },
    }),

  // UPSTREAM_ERROR
  upstreamBodyTooLarge: (cause: unknown) =>
    new GatewayError(ErrorCode.UPSTREAM_ERROR, 'Upstream answered with a body larger than the gateway reads', { cause }),
  upstreamRequestFailed: (cause: unknown) => new GatewayError(ErrorCode.UPSTREAM_ERROR, 'Upstream request failed', { cause }),
  upstreamNotJson: (status: number) =>
    new GatewayError(ErrorCode.UPSTREAM_ERROR, `Upstream answered ${status} with a body that is not JSON`),
  /** `problem`: the contract parser's words for what it could not read. */
  answerOffContract: (problem: string) =>
    new GatewayError(ErrorCode.UPSTREAM_ERROR, `The service's answer is not what the contract shows: ${problem}`),
  /** `problem`: the contract parser's words for the product line it could not read. */
  vendingOffContract: (vendingId: string, problem: string) =>
    new GatewayError(ErrorCode.UPSTREAM_ERROR, `vending ${vendingId}: ${problem}`),
  /** `what`: the resource in words; `kind`: the drift's kind, for `extensions.drift`. */
  fieldMissing: (what: string, field: string, kind: string) =>
    new GatewayError(ErrorCode.UPSTREAM_ERROR, `The service sent this ${what} without ${field}`, { extensions: { field, drift: kind } }),
  /** `sent`, `expected`: JSON types; `kind`: the drift's kind, for `extensions.drift`. */
  fieldMistyped: (what: string, field: string, sent: string, expected: string, kind: string) =>
    new GatewayError(
      ErrorCode.UPSTREAM_ERROR,
      `The service sent ${field} of this ${what} as ${sent} where the contract shows ${expected}`,
      {
        extensions: { field, drift: kind },
      },
    ),
  lineTotalTooLarge: () =>
    new GatewayError(ErrorCode.UPSTREAM_ERROR, 'The service sent prices and quantities whose total is past the largest number'),
  gatewayKeyRefused: () =>
    new GatewayError(ErrorCode.UPSTREAM_ERROR, 'The gateway is not allowed to use the service; its operators have been told'),
  keyCheckOddAnswer: (cause: unknown) =>
    new GatewayError(ErrorCode.UPSTREAM_ERROR, 'The service gave an unexpected answer when asked about this API key', {
      failsRequest: true,
      headers: { 'retry-after': '1' },
      cause,
    }),

  // An upstream answer outside 2xx: its status kept (REST repeats a 4xx), a message of ours.
  serviceRefusedAsInvalid: (status: number) =>
    new GatewayError(ErrorCode.BAD_USER_INPUT, `The service refused the request as invalid (${status})`, { upstreamStatus: status }),
  serviceRefusedKey: (status: number) =>
    new GatewayError(ErrorCode.UNAUTHENTICATED, 'The service did not accept the key', { upstreamStatus: status }),
  serviceForbade: (status: number) => new GatewayError(ErrorCode.FORBIDDEN, 'The key may not do this', { upstreamStatus: status }),
  /** `what`: the resource in words. */
  serviceFoundNothing: (what: string, status: number) =>
    new GatewayError(ErrorCode.NOT_FOUND, `The ${what} was not found`, { upstreamStatus: status }),
  serviceLimiting: (status: number) =>
    new GatewayError(ErrorCode.RATE_LIMITED, 'The service is limiting requests; try again shortly', { upstreamStatus: status }),
  serviceFailed: (status: number) =>
    new GatewayError(ErrorCode.UPSTREAM_ERROR, `The service failed to answer (${status})`, { upstreamStatus: status }),

  // UPSTREAM_TIMEOUT
  upstreamTimedOut: (timeoutMs: number, cause: unknown) =>
    new GatewayError(ErrorCode.UPSTREAM_TIMEOUT, `Upstream did not answer within ${timeoutMs} ms`, { cause }),
  upstreamConnectionsBusy: (ms: number) =>
    new GatewayError(ErrorCode.UPSTREAM_TIMEOUT, `Upstream did not answer within ${ms} ms (every connection to it was busy)`),

  // UPSTREAM_UNAVAILABLE
  /** `code`: the network error's code (ECONNREFUSED…). */
  upstreamUnreachable: (code: string, cause: unknown) =>
    new GatewayError(ErrorCode.UPSTREAM_UNAVAILABLE, `Upstream is unreachable (${code})`, { cause }),
  upstreamQueueFull: () => new GatewayError(ErrorCode.UPSTREAM_UNAVAILABLE, 'Too many upstream requests waiting; try again shortly'),
  upstreamClientClosed: (cause: unknown) => new GatewayError(ErrorCode.UPSTREAM_UNAVAILABLE, 'Upstream client is closed', { cause }),
  circuitOpen: (cause: unknown) =>
    new GatewayError(ErrorCode.UPSTREAM_UNAVAILABLE, 'Upstream is failing; requests are paused for a moment (circuit open)', { cause }),
  /** The failure of work stopped because its client left (an abort signal's reason as a GatewayError). */
  abandoned: () =>
    new GatewayError(ErrorCode.UPSTREAM_UNAVAILABLE, 'The request was abandoned: its client went away', { cause: new ClientGone() }),
  historyUnavailable: (cause: unknown) =>
    new GatewayError(
      ErrorCode.UPSTREAM_UNAVAILABLE,
      'The transaction history cannot be read right now (its store does not answer); retry later',
      { cause },
    ),
  /** The store could not be asked (Redis away): nothing is known of the token yet. */
  tokenStoreAway: (cause: unknown) =>
    new GatewayError(
      ErrorCode.UPSTREAM_UNAVAILABLE,
      'Subscription tokens cannot be minted or taken now: their store (Redis) is not answering',
      { failsRequest: true, headers: { 'retry-after': '1' }, cause },
    ),
  keySetUnavailable: (cause: unknown) =>
    new GatewayError(ErrorCode.UPSTREAM_UNAVAILABLE, 'Tokens cannot be verified now: the key set (JWT_JWKS_URL) could not be fetched', {
      failsRequest: true,
      headers: { 'retry-after': '1' },
      cause,
    }),
  keyChecksFailing: () =>
    new GatewayError(
      ErrorCode.UPSTREAM_UNAVAILABLE,
      'The service is failing; the gateway cannot check API keys with it now; try again shortly',
      { failsRequest: true, headers: { 'retry-after': '1' } },
    ),

  // Refusals of the key check, told again: code and message as the first telling worded them (above).
  /** A refusal remembered from the service, told again with its status. */
  keyRefusedAgain: (code: ErrorCode, message: string, upstreamStatus: number | undefined, failsRequest: boolean) =>
    new GatewayError(code, message, { upstreamStatus, failsRequest }),
  /** A refusal of authentication told again with the challenge that says where to get a token (RFC 9728 §5.1, MCP). */
  unauthenticatedWithChallenge: (refusal: GatewayError, challenge: string) =>
    new GatewayError(refusal.code, refusal.message, { headers: { ...refusal.headers, 'www-authenticate': challenge } }),
  /** A failure of the check a client may retry as it is, failing the whole request. */
  keyCheckFailed: (failure: GatewayError) =>
    new GatewayError(failure.code, failure.message, { failsRequest: true, headers: { 'retry-after': '1' }, cause: failure }),
};
