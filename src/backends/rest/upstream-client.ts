import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import { upstreamFailure } from './upstream-errors.js';

/*
 * The one file that speaks HTTP to the upstream: a keep-alive undici Pool with
 * bounded connections, one deadline per call (every attempt, retry delay and
 * body byte included: undici's own timeouts restart with each body chunk, so
 * an upstream that drips would hold a call for ever), the caller's abort
 * signal, and retries for idempotent reads only (a PUT is never repeated: the
 * contract does not say it is idempotent).
 */

export interface UpstreamClientOptions {
  /** Base address, possibly with a path prefix (`http://host/api`). */
  url: string;
  /** Deadline of a whole call: every attempt, retry delay and body byte. */
  timeoutMs: number;
  /** Most open connections. */
  connections: number;
  /** Most retries of a GET after a reset connection or a 502/503/504. */
  retries: number;
  /** First retry delay; each next one doubles, plus up to as much again of jitter. @default 50 */
  retryBaseMs?: number;
  /** Largest response body read, in bytes. @default 16777216 */
  maxResponseBytes?: number;
}

export interface UpstreamRequest {
  method: 'GET' | 'PUT';
  /** Path below the base address, with its query string. */
  path: string;
  authorization: string | undefined;
  /** JSON text to send. */
  body?: string;
  /** The caller's signal: aborting it stops the call (its reason is thrown). */
  signal?: AbortSignal | undefined;
  /** What is left of the call's deadline (it may have waited for a slot first). @default the client's `timeoutMs` */
  timeoutMs?: number;
}

export interface UpstreamResponse {
  status: number;
  contentType: string | undefined;
  text: string;
  /** How many attempts it took (1 without retries). */
  attempts: number;
}

const retriedStatuses = new Set([502, 503, 504]);
// Errors that mean the connection broke after it was made; a fresh one may work.
const retriedErrorCodes = new Set(['ECONNRESET', 'UND_ERR_SOCKET', 'EPIPE']);

function errorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

export interface UpstreamClient {
  send(request: UpstreamRequest): Promise<UpstreamResponse>;
  /** Waits for calls under way to end; `destroy` ends them at once. */
  close(): Promise<void>;
  destroy(): Promise<void>;
}

/** The abort reason of a call past its deadline. */
class DeadlinePassed extends Error {
  override name = 'TimeoutError';
}

export function createUpstreamClient(options: UpstreamClientOptions): UpstreamClient {
  const base = new URL(options.url);
  const prefix = base.pathname.replace(/\/+$/, '');
  const retryBaseMs = options.retryBaseMs ?? 50;
  const pool = new Pool(base.origin, {
    connections: options.connections,
    pipelining: 1,
    keepAliveTimeout: 4_000,
    // Backstops only: the call's own deadline (below) comes first.
    headersTimeout: options.timeoutMs,
    bodyTimeout: options.timeoutMs,
    connectTimeout: Math.min(options.timeoutMs, 5_000),
    maxResponseSize: options.maxResponseBytes ?? 16_777_216,
  });

  async function attempt(request: UpstreamRequest, signal: AbortSignal): Promise<Omit<UpstreamResponse, 'attempts'>> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (request.authorization !== undefined) headers.authorization = request.authorization;
    if (request.body !== undefined) headers['content-type'] = 'application/json';
    const response = await pool.request({
      method: request.method,
      path: prefix + request.path,
      headers,
      body: request.body,
      signal,
    });
    const contentType = response.headers['content-type'];
    return {
      status: response.statusCode,
      contentType: Array.isArray(contentType) ? contentType[0] : contentType,
      text: await response.body.text(),
    };
  }

  async function attempts(request: UpstreamRequest, signal: AbortSignal): Promise<UpstreamResponse> {
    const maxAttempts = request.method === 'GET' ? options.retries + 1 : 1;
    for (let attempts = 1; ; attempts++) {
      const last = attempts >= maxAttempts;
      try {
        const response = await attempt(request, signal);
        if (last || !retriedStatuses.has(response.status)) return { ...response, attempts };
      } catch (error) {
        if (signal.aborted || last || !retriedErrorCodes.has(errorCode(error) ?? '')) throw error;
      }
      const backoff = retryBaseMs * 2 ** (attempts - 1);
      await sleep(backoff + Math.random() * backoff, undefined, { signal });
    }
  }

  return {
    async send(request) {
      const callerSignal = request.signal;
      if (callerSignal?.aborted) throw callerSignal.reason;
      // One controller per call: the deadline and the caller's signal both abort it, with their own reasons.
      const call = new AbortController();
      const deadline = setTimeout(() => call.abort(new DeadlinePassed()), request.timeoutMs ?? options.timeoutMs);
      const callerLeft = () => call.abort(callerSignal?.reason);
      callerSignal?.addEventListener('abort', callerLeft, { once: true });
      try {
        return await attempts(request, call.signal);
      } catch (error) {
        const reason: unknown = call.signal.aborted ? call.signal.reason : error;
        // The caller's own reason (its client left) is the caller's to read, as it is.
        if (reason !== undefined && reason === callerSignal?.reason) throw reason;
        throw upstreamFailure(reason, options.timeoutMs);
      } finally {
        clearTimeout(deadline);
        callerSignal?.removeEventListener('abort', callerLeft);
      }
    },
    close: () => pool.close(),
    destroy: () => pool.destroy(),
  };
}
