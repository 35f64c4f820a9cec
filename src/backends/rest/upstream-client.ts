import { Pool, type Dispatcher } from 'undici';
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
  /** `traceparent` (and `tracestate`) of the call's span, sent on every attempt; only with tracing on. */
  traceHeaders?: Record<string, string> | undefined;
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
 * What stops one call: its deadline or its owner leaving. At most one thing
 * waits on it at a time (an exchange or a retry's pause), told through
 * `onAbort`: cheaper per call than an AbortSignal or an EventEmitter (S9).
 */
class CallStop {
  aborted = false;
  reason: unknown = undefined;
  onAbort: ((reason: unknown) => void) | undefined = undefined;

  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.onAbort?.(reason);
  }
}

/** Waits `ms`, or rejects with the stop's reason as soon as the call is stopped. */
function pause(ms: number, stop: CallStop): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (stop.aborted) return reject(stop.reason);
    const timer = setTimeout(() => {
      stop.onAbort = undefined;
      resolve();
    }, ms);
    stop.onAbort = (reason) => {
      clearTimeout(timer);
      reject(reason);
    };
  });
}

type Exchanged = Omit<UpstreamResponse, 'attempts'>;

/**
 * One request and its whole answer through undici's dispatch API: the body is
 * gathered as it arrives, with no stream and no signal per call, which cost a
 * read a third of its CPU through `request()` (bench S9). The stop aborts the
 * exchange at once, even one still queued for a connection.
 */
function exchange(pool: Dispatcher, options: Dispatcher.DispatchOptions, stop: CallStop): Promise<Exchanged> {
  return new Promise<Exchanged>((resolve, reject) => {
    if (stop.aborted) return reject(stop.reason);
    let settled = false;
    let status = 0;
    let contentType: string | string[] | undefined;
    const chunks: Buffer[] = [];
    const settle = () => {
      const first = !settled;
      settled = true;
      stop.onAbort = undefined;
      return first;
    };
    // Still queued for a connection: the call fails now, and the request is aborted when it starts.
    stop.onAbort = (reason) => {
      if (settle()) reject(reason);
    };
    pool.dispatch(options, {
      onRequestStart(started) {
        if (stop.aborted) return started.abort(stop.reason as Error);
        // Only this closure holds undici's controller, and only until the exchange settles: the
        // controller reaches the connection's whole state, and a call's own closures holding it
        // kept every request's objects alive past two young collections (promoted, then swept by
        // full collections: 3 MB promoted per scavenge at 14k calls a second; 0.3 MB without).
        stop.onAbort = (reason) => {
          started.abort(reason as Error);
          if (settle()) reject(reason);
        };
      },
      onResponseStart(_controller, statusCode, headers) {
        status = statusCode;
        contentType = headers['content-type'];
      },
      onResponseData(_controller, chunk) {
        chunks.push(chunk);
      },
      onResponseEnd() {
        if (!settle()) return;
        const text = (chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)).toString('utf8');
        resolve({ status, contentType: Array.isArray(contentType) ? contentType[0] : contentType, text });
      },
      onResponseError(_controller, error) {
        if (settle()) reject(error);
      },
    });
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

  function attempt(request: UpstreamRequest, stop: CallStop): Promise<Exchanged> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (request.authorization !== undefined) headers.authorization = request.authorization;
    if (request.body !== undefined) headers['content-type'] = 'application/json';
    if (request.traceHeaders) Object.assign(headers, request.traceHeaders);
    return exchange(pool, { method: request.method, path: prefix + request.path, headers, body: request.body }, stop);
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
