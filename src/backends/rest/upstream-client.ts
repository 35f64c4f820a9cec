import { EventEmitter } from 'node:events';
import { Pool } from 'undici';
import { ClientGone } from '../../errors.js';
import type { Owner } from '../owner.js';
import { upstreamFailure } from './upstream-errors.js';

/*
 * The one file that speaks HTTP to the upstream: a keep-alive undici Pool with
 * bounded connections, one deadline per call (every attempt, retry delay and
 * body byte included: undici's own timeouts restart with each body chunk, so
 * an upstream that drips would hold a call for ever), the call's owner (it
 * stops when they leave), and retries for idempotent reads only (a PUT is
 * never repeated: the contract does not say it is idempotent).
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
  /** Whom the call is for: when they go, the call stops (throwing `ClientGone`). */
  owner?: Owner | undefined;
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

/**
 * What stops one call: its deadline or its owner leaving. undici takes an
 * EventEmitter with `aborted` and `reason` as a request's signal; an
 * AbortSignal's EventTarget listeners cost every call microseconds (bench S1).
 */
class CallStop extends EventEmitter {
  aborted = false;
  reason: unknown = undefined;

  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.emit('abort');
  }
}

/** Waits `ms`, or rejects with the stop's reason as soon as the call is stopped. */
function pause(ms: number, stop: CallStop): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const done = () => {
      clearTimeout(timer);
      stop.off('abort', done);
      if (stop.aborted) reject(stop.reason);
      else resolve();
    };
    const timer = setTimeout(done, ms);
    stop.once('abort', done);
  });
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

  async function attempt(request: UpstreamRequest, stop: CallStop): Promise<Omit<UpstreamResponse, 'attempts'>> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (request.authorization !== undefined) headers.authorization = request.authorization;
    if (request.body !== undefined) headers['content-type'] = 'application/json';
    const response = await pool.request({
      method: request.method,
      path: prefix + request.path,
      headers,
      body: request.body,
      signal: stop,
    });
    const contentType = response.headers['content-type'];
    return {
      status: response.statusCode,
      contentType: Array.isArray(contentType) ? contentType[0] : contentType,
      text: await response.body.text(),
    };
  }

  async function attempts(request: UpstreamRequest, stop: CallStop): Promise<UpstreamResponse> {
    const maxAttempts = request.method === 'GET' ? options.retries + 1 : 1;
    for (let attempts = 1; ; attempts++) {
      const last = attempts >= maxAttempts;
      try {
        const response = await attempt(request, stop);
        if (last || !retriedStatuses.has(response.status)) return { ...response, attempts };
      } catch (error) {
        if (stop.aborted || last || !retriedErrorCodes.has(errorCode(error) ?? '')) throw error;
      }
      const backoff = retryBaseMs * 2 ** (attempts - 1);
      await pause(backoff + Math.random() * backoff, stop);
    }
  }

  return {
    async send(request) {
      const { owner } = request;
      if (owner?.gone) throw new ClientGone();
      // The deadline and the owner's leaving both stop the call, each with its reason.
      const stop = new CallStop();
      const deadline = setTimeout(() => stop.abort(new DeadlinePassed()), request.timeoutMs ?? options.timeoutMs);
      const forget = owner?.onGone(() => stop.abort(new ClientGone()));
      try {
        return await attempts(request, stop);
      } catch (error) {
        const reason: unknown = stop.aborted ? stop.reason : error;
        // The owner's leaving is the caller's to read, as it is.
        if (reason instanceof ClientGone) throw reason;
        throw upstreamFailure(reason, options.timeoutMs);
      } finally {
        clearTimeout(deadline);
        forget?.();
      }
    },
    close: () => pool.close(),
    destroy: () => pool.destroy(),
  };
}
