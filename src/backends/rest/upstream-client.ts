import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import { upstreamFailure } from './upstream-errors.js';

/*
 * The one file that speaks HTTP to the upstream: a keep-alive undici Pool with
 * bounded connections, a deadline per attempt (for the answer's head and for its body), and retries for idempotent reads
 * only (a PUT is never repeated: the contract does not say it is idempotent).
 */

export interface UpstreamClientOptions {
  /** Base address, possibly with a path prefix (`http://host/api`). */
  url: string;
  /** Deadline for the answer's head, and again between body chunks, of one attempt. */
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
  close(): Promise<void>;
}

export function createUpstreamClient(options: UpstreamClientOptions): UpstreamClient {
  const base = new URL(options.url);
  const prefix = base.pathname.replace(/\/+$/, '');
  const retryBaseMs = options.retryBaseMs ?? 50;
  const pool = new Pool(base.origin, {
    connections: options.connections,
    pipelining: 1,
    keepAliveTimeout: 4_000,
    headersTimeout: options.timeoutMs,
    bodyTimeout: options.timeoutMs,
    connectTimeout: Math.min(options.timeoutMs, 5_000),
    maxResponseSize: options.maxResponseBytes ?? 16_777_216,
  });

  async function attempt(request: UpstreamRequest): Promise<Omit<UpstreamResponse, 'attempts'>> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (request.authorization !== undefined) headers.authorization = request.authorization;
    if (request.body !== undefined) headers['content-type'] = 'application/json';
    const response = await pool.request({
      method: request.method,
      path: prefix + request.path,
      headers,
      body: request.body,
      // undici's own per-request deadlines, rather than an AbortSignal per call (a timer and a
      // DOMException each, a measurable cost per request); queueing is bounded by the limiter in front.
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
    });
    const contentType = response.headers['content-type'];
    return {
      status: response.statusCode,
      contentType: Array.isArray(contentType) ? contentType[0] : contentType,
      text: await response.body.text(),
    };
  }

  return {
    async send(request) {
      const maxAttempts = request.method === 'GET' ? options.retries + 1 : 1;
      for (let attempts = 1; ; attempts++) {
        const last = attempts >= maxAttempts;
        try {
          const response = await attempt(request);
          if (last || !retriedStatuses.has(response.status)) return { ...response, attempts };
        } catch (error) {
          if (last || !retriedErrorCodes.has(errorCode(error) ?? '')) throw upstreamFailure(error, options.timeoutMs);
        }
        const backoff = retryBaseMs * 2 ** (attempts - 1);
        await sleep(backoff + Math.random() * backoff);
      }
    },
    close: () => pool.close(),
  };
}
