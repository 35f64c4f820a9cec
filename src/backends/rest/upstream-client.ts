import { Pool, type Dispatcher } from 'undici';
import { ClientGone } from '../../errors.js';
import type { Caller } from '../caller.js';
import { upstreamFailure } from './upstream-errors.js';
import { backoffDelay } from '../../timing/backoff.js';

/*
 * The one file that speaks HTTP to the upstream: a keep-alive undici Pool with
 * bounded connections, one deadline per call (every attempt, retry delay and
 * body byte included: undici's own timeouts restart with each body chunk, so
 * an upstream that drips would hold a call for ever), the call's caller (it
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
  caller?: Caller | undefined;
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

/** What a call's stop tells when it fires: the exchange or the retry pause under way. */
interface Stoppable {
  stop(reason: unknown): void;
}

/**
 * What stops one call: its deadline or its caller leaving. At most one thing
 * waits on it at a time (an exchange or a retry's pause), told through
 * `waiting`: cheaper per call than an AbortSignal or an EventEmitter (S9).
 */
class CallStop {
  aborted = false;
  reason: unknown = undefined;
  waiting: Stoppable | undefined = undefined;

  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.waiting?.stop(reason);
  }
}

/** Waits `ms`, or rejects with the stop's reason as soon as the call is stopped. */
function pause(ms: number, stop: CallStop): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (stop.aborted) return reject(stop.reason);
    const timer = setTimeout(() => {
      stop.waiting = undefined;
      resolve();
    }, ms);
    stop.waiting = {
      stop(reason) {
        clearTimeout(timer);
        reject(reason);
      },
    };
  });
}

type Exchanged = Omit<UpstreamResponse, 'attempts'>;

/**
 * One request and its whole answer, as undici's dispatch handler. A class that
 * lets go of everything when it settles, not a literal of closures: V8 may
 * allocate a long-lived allocation site's objects in the old generation, where
 * a settled handler's closures would keep the call's whole chain (promises,
 * the awaiting functions, the body) alive until the next full collection.
 * Holding nothing once settled, its age is harmless (docs/performance.md,
 * "Cells that let go").
 */
class Exchange implements Dispatcher.DispatchHandler, Stoppable {
  private status = 0;
  private contentType: string | string[] | undefined = undefined;
  private chunks: Buffer[] | undefined = [];
  private controller: Dispatcher.DispatchController | undefined = undefined;
  private resolve: ((exchanged: Exchanged) => void) | undefined;
  private reject: ((reason: unknown) => void) | undefined;
  private call: CallStop | undefined;
  /** Why the call was stopped, for a request that starts after it was (queued for a connection till then). */
  private stoppedWith: unknown = undefined;

  constructor(call: CallStop, resolve: (exchanged: Exchanged) => void, reject: (reason: unknown) => void) {
    this.call = call;
    this.resolve = resolve;
    this.reject = reject;
    call.waiting = this;
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    // Stopped while queued for a connection: the call has failed already, the request ends as it starts.
    if (!this.call) return controller.abort(this.stoppedWith as Error);
    this.controller = controller;
  }

  onResponseStart(
    _controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: Record<string, string | string[] | undefined>,
  ): void {
    this.status = statusCode;
    this.contentType = headers['content-type'];
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.chunks?.push(chunk);
  }

  onResponseEnd(): void {
    const { chunks, resolve, status, contentType } = this;
    if (!chunks || !resolve) return;
    this.settle();
    const text = (chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)).toString('utf8');
    resolve({ status, contentType: Array.isArray(contentType) ? contentType[0] : contentType, text });
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    const { reject } = this;
    this.settle();
    reject?.(error);
  }

  /** The call was stopped: the request ends now, even one still queued for a connection. */
  stop(reason: unknown): void {
    const { reject, controller } = this;
    this.settle();
    this.stoppedWith = reason;
    controller?.abort(reason as Error);
    reject?.(reason);
  }

  /** Once settled, the handler holds nothing of the call. */
  private settle(): void {
    if (this.call?.waiting === this) this.call.waiting = undefined;
    this.call = undefined;
    this.controller = undefined;
    this.resolve = undefined;
    this.reject = undefined;
    this.chunks = undefined;
  }
}

/**
 * One request and its whole answer through undici's dispatch API: the body is
 * gathered as it arrives, with no stream and no signal per call, which cost a
 * read a third of its CPU through `request()` (bench S9). The stop aborts the
 * exchange at once, even one still queued for a connection.
 */
function exchange(pool: Dispatcher, options: Dispatcher.DispatchOptions, stop: CallStop): Promise<Exchanged> {
  return new Promise<Exchanged>((resolve, reject) => {
    if (stop.aborted) return reject(stop.reason);
    pool.dispatch(options, new Exchange(stop, resolve, reject));
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
      await pause(backoffDelay(attempts, { firstMs: retryBaseMs, jitter: 1 }), stop);
    }
  }

  return {
    async send(request) {
      const { caller } = request;
      if (caller?.left) throw new ClientGone();
      // The deadline and the caller's leaving both stop the call, each with its reason.
      const stop = new CallStop();
      const deadline = setTimeout(() => stop.abort(new DeadlinePassed()), request.timeoutMs ?? options.timeoutMs);
      const forget = caller?.onLeft(() => stop.abort(new ClientGone()));
      try {
        return await attempts(request, stop);
      } catch (error) {
        const reason: unknown = stop.aborted ? stop.reason : error;
        // The caller's leaving is the caller's to read, as it is.
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
