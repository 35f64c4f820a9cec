import { errorMessageOf } from '../../contract/contract.js';
import type { GatewayError } from '../../errors.js';
import { refuse } from '../../refusals/refusals.js';

/*
 * Upstream failures as the gateway's error codes (`ErrorCode`). The contract
 * gives no status codes (part 7), so the usual HTTP meanings are assumed.
 * Clients get a message of ours: the upstream's own text can carry anything
 * (connection strings, keys), so it only goes to the log (`upstreamMessage`).
 */

const timeoutCodes = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);
const unreachableCodes = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_DESTROYED',
]);

/** A request that got no usable answer: refused, reset, or too slow. */
export function upstreamFailure(error: unknown, timeoutMs: number): GatewayError {
  const { code, name } = (error ?? {}) as { code?: string; name?: string };
  if (name === 'TimeoutError' || name === 'AbortError' || (code && timeoutCodes.has(code))) {
    return refuse.upstreamTimedOut(timeoutMs, error);
  }
  if (code && unreachableCodes.has(code)) {
    return refuse.upstreamUnreachable(code, error);
  }
  if (code === 'UND_ERR_RES_EXCEEDED_MAX_SIZE') {
    return refuse.upstreamBodyTooLarge(error);
  }
  return refuse.upstreamRequestFailed(error);
}

/** Most characters of an upstream's error text kept for the log. */
const LOGGED_TEXT_CHARS = 500;

/** The upstream's own words about a failed answer, for the log only (cut to a bound). */
export function upstreamMessageOf(text: string): string {
  let message: string | undefined;
  try {
    message = errorMessageOf(JSON.parse(text));
  } catch {
    message = undefined;
  }
  return (message ?? text).slice(0, LOGGED_TEXT_CHARS);
}

/**
 * An upstream answer outside 2xx: its status kept (REST repeats a 4xx), a
 * message of ours. `ownKey`: the gateway sent its own key (UPSTREAM_API_KEY),
 * so a refusal of it is the gateway's fault, never the client's.
 */
export function failureFromStatus(status: number, what: string, ownKey: boolean): GatewayError {
  if (ownKey && (status === 401 || status === 403)) {
    return refuse.gatewayKeyRefused();
  }
  // Each refusal carries the code of the status's usual HTTP meaning (BAD_USER_INPUT for 400 and 422, and so on).
  switch (status) {
    case 400:
    case 422:
      return refuse.serviceRefusedAsInvalid(status);
    case 401:
      return refuse.serviceRefusedKey(status);
    case 403:
      return refuse.serviceForbade(status);
    case 404:
      return refuse.serviceFoundNothing(what, status);
    case 429:
      return refuse.serviceLimiting(status);
    default:
      return refuse.serviceFailed(status);
  }
}
