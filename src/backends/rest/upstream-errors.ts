import { errorMessageOf } from '../../contract/index.js';
import { GatewayError, type ErrorCode } from '../../errors.js';

/*
 * Upstream failures as the gateway's error codes (DESIGN §3). The contract
 * gives no status codes (part 7), so the usual HTTP meanings are assumed, and
 * the upstream's own message is kept whenever it sent one.
 */

const timeoutCodes = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);
const unreachableCodes = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE',
  'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED', 'UND_ERR_DESTROYED',
]);

/** A request that got no usable answer: refused, reset, or too slow. */
export function upstreamFailure(error: unknown, timeoutMs: number): GatewayError {
  const { code, name } = (error ?? {}) as { code?: string; name?: string };
  if (name === 'TimeoutError' || name === 'AbortError' || (code && timeoutCodes.has(code))) {
    return new GatewayError('UPSTREAM_TIMEOUT', `Upstream did not answer within ${timeoutMs} ms`, { cause: error });
  }
  if (code && unreachableCodes.has(code)) {
    return new GatewayError('UPSTREAM_UNAVAILABLE', `Upstream is unreachable (${code})`, { cause: error });
  }
  if (code === 'UND_ERR_RES_EXCEEDED_MAX_SIZE') {
    return new GatewayError('UPSTREAM_ERROR', 'Upstream answered with a body larger than the gateway reads', { cause: error });
  }
  return new GatewayError('UPSTREAM_ERROR', 'Upstream request failed', { cause: error });
}

function codeForStatus(status: number): ErrorCode {
  switch (status) {
    case 400:
    case 422:
      return 'BAD_USER_INPUT';
    case 401:
      return 'UNAUTHENTICATED';
    case 403:
      return 'FORBIDDEN';
    case 404:
      return 'NOT_FOUND';
    case 429:
      return 'RATE_LIMITED';
    default:
      return 'UPSTREAM_ERROR';
  }
}

/** An upstream answer outside 2xx, keeping its status and message. */
export function failureFromStatus(status: number, text: string): GatewayError {
  let message: string | undefined;
  try {
    message = errorMessageOf(JSON.parse(text));
  } catch {
    message = undefined;
  }
  return new GatewayError(codeForStatus(status), message ?? `Upstream answered ${status} without an error message`, {
    upstreamStatus: status,
  });
}
