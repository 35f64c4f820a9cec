import { errorMessageOf } from '../../contract/contract.js';
import { ErrorCode, GatewayError } from '../../errors.js';

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
    return new GatewayError(ErrorCode.UPSTREAM_TIMEOUT, `Upstream did not answer within ${timeoutMs} ms`, { cause: error });
  }
  if (code && unreachableCodes.has(code)) {
    return new GatewayError(ErrorCode.UPSTREAM_UNAVAILABLE, `Upstream is unreachable (${code})`, { cause: error });
  }
  if (code === 'UND_ERR_RES_EXCEEDED_MAX_SIZE') {
    return new GatewayError(ErrorCode.UPSTREAM_ERROR, 'Upstream answered with a body larger than the gateway reads', { cause: error });
  }
  return new GatewayError(ErrorCode.UPSTREAM_ERROR, 'Upstream request failed', { cause: error });
}

function codeForStatus(status: number): ErrorCode {
  switch (status) {
    case 400:
    case 422:
      return ErrorCode.BAD_USER_INPUT;
    case 401:
      return ErrorCode.UNAUTHENTICATED;
    case 403:
      return ErrorCode.FORBIDDEN;
    case 404:
      return ErrorCode.NOT_FOUND;
    case 429:
      return ErrorCode.RATE_LIMITED;
    default:
      return ErrorCode.UPSTREAM_ERROR;
  }
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

function messageFor(status: number, what: string): string {
  switch (codeForStatus(status)) {
    case ErrorCode.BAD_USER_INPUT:
      return `The service refused the request as invalid (${status})`;
    case ErrorCode.UNAUTHENTICATED:
      return 'The service did not accept the key';
    case ErrorCode.FORBIDDEN:
      return 'The key may not do this';
    case ErrorCode.NOT_FOUND:
      return `The ${what} was not found`;
    case ErrorCode.RATE_LIMITED:
      return 'The service is limiting requests; try again shortly';
    default:
      return `The service failed to answer (${status})`;
  }
}

/**
 * An upstream answer outside 2xx: its status kept (REST repeats a 4xx), a
 * message of ours. `ownKey`: the gateway sent its own key (UPSTREAM_API_KEY),
 * so a refusal of it is the gateway's fault, never the client's.
 */
export function failureFromStatus(status: number, what: string, ownKey: boolean): GatewayError {
  if (ownKey && (status === 401 || status === 403)) {
    return new GatewayError(ErrorCode.UPSTREAM_ERROR, 'The gateway is not allowed to use the service; its operators have been told');
  }
  return new GatewayError(codeForStatus(status), messageFor(status, what), { upstreamStatus: status });
}
