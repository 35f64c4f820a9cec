import {
  ContractViolation,
  driftsIn,
  idProblem,
  isJsonObject,
  noteSentAs,
  parseTransaction,
  parseVending,
  parseVendingList,
  unwrapData,
  type Drift,
} from '../../contract/contract.js';
import { ClientGone, ErrorCode, isGatewayError } from '../../errors.js';
import { refuse } from '../../refusals/refusals.js';
import { spendUpstreamCall, type Backend, type CallScope, type Credential, type VendingQuery } from '../backend.js';
import type { Caller } from '../caller.js';
import { createCircuitBreaker, type BreakerState, type CircuitBreakerOptions } from './circuit-breaker.js';
import { createConcurrencyLimit } from './concurrency-limit.js';
import { createUpstreamClient, type UpstreamClientOptions, type UpstreamRequest } from './upstream-client.js';
import { failureFromStatus, upstreamMessageOf } from './upstream-errors.js';
import { context, SpanKind, SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import { traceHeaders, type Tracing } from '../../tracing/tracing.js';

/** One finished upstream call, for request logs and metrics. */
export interface UpstreamCall {
  method: string;
  /** The contract's path template, e.g. `/transactions/{id}`. */
  route: string;
  /** HTTP status, or the gateway's error code when no answer came. */
  outcome: number | string;
  durationMs: number;
  /** 0 when the call was refused before reaching the upstream (circuit open, queue full). */
  attempts: number;
  /** What the upstream said of a failed answer: for the log, never for clients. */
  upstreamMessage?: string;
}

export interface RestBackendOptions extends UpstreamClientOptions {
  /** Sent as `Authorization` on every call; when undefined each client's own header is forwarded as is. */
  apiKey: string | undefined;
  /** Told of every upstream call when it ends, with the scope of the request it was made for (if any). */
  onUpstreamCall?: (call: UpstreamCall, scope: CallScope | undefined) => void;
  /** Circuit breaker settings (from the configuration, as the two below). */
  breaker: CircuitBreakerOptions;
  /** Most upstream requests under way at once; more wait in a FIFO queue. */
  maxConcurrent: number;
  /** Most requests waiting for a slot; beyond it a call fails at once with UPSTREAM_UNAVAILABLE. */
  maxQueued: number;
  /**
   * Told of the drifts from the contract in each success body read (the tolerant
   * reader's: contract/parse.ts), with the contract's path template of the call.
   */
  onContractDrift?: (drifts: readonly Drift[], route: string) => void;
  /** The `products` value of the flat view (PRODUCTS_FLAT): vendings read in it have their product lines read too. @default none */
  flatProducts?: string | undefined;
  /** With tracing on: a client span per call (its wait for a slot and every attempt), its `traceparent` sent upstream. @default off */
  tracing?: Tracing | undefined;
}

/** The client span of one upstream call, a child of whatever span is active (the GraphQL operation, the REST request). */
function startClientSpan(tracing: Tracing, method: string, route: string): { span: Span; headers: Record<string, string> } {
  const span = tracing.tracer.startSpan(`${method} ${route}`, {
    kind: SpanKind.CLIENT,
    attributes: { 'http.request.method': method, 'url.template': route },
  });
  return { span, headers: traceHeaders(trace.setSpan(context.active(), span)) };
}

function endClientSpan(span: Span, call: Omit<UpstreamCall, 'method' | 'route' | 'durationMs'>): void {
  if (typeof call.outcome === 'number') span.setAttribute('http.response.status_code', call.outcome);
  else span.setAttribute('error.type', call.outcome);
  span.setAttribute('vending_gateway.upstream.attempts', call.attempts);
  if (call.attempts > 1) span.setAttribute('http.request.resend_count', call.attempts - 1);
  if (typeof call.outcome !== 'number' || call.outcome >= 400) span.setStatus({ code: SpanStatusCode.ERROR });
  span.end();
}

/** How the protection in front of the upstream stands, for health checks and metrics. */
export interface UpstreamState {
  breaker: BreakerState;
  inFlight: number;
  queued: number;
}

export interface RestBackend extends Backend {
  upstreamState(): UpstreamState;
}

/**
 * An id as one path segment, under the one id rule (contract/ids.ts): the
 * routes refuse a bad id first, so one from elsewhere (a transaction's id in
 * the history) names nothing here, and `encodeURIComponent` never meets a
 * lone surrogate (its URIError would be masked as an unexpected error).
 */
function segment(id: string): string {
  const problem = idProblem(id);
  if (problem) throw refuse.idNamesNothing(problem);
  return encodeURIComponent(id);
}
const productsQuery = ({ products }: VendingQuery): string => (products === undefined ? '' : `?products=${encodeURIComponent(products)}`);

/** The Backend in front of the real service (contract part 4), over one undici Pool. */
export function createRestBackend(options: RestBackendOptions): RestBackend {
  const client = createUpstreamClient(options);
  const breaker = createCircuitBreaker(options.breaker);
  const limiter = createConcurrencyLimit({ maxConcurrent: options.maxConcurrent, maxQueued: options.maxQueued });

  /** limiter → breaker → client. An open circuit refuses at once instead of queueing behind slow calls first. */
  function guarded<T>(work: () => Promise<T>, caller: Caller | undefined): Promise<T> {
    const throughBreaker = () => breaker.run(work);
    // The wait for a slot is part of the call's deadline: a queue behind slow calls cannot stretch it.
    return breaker.state() === 'open' ? throughBreaker() : limiter.run(throughBreaker, caller, options.timeoutMs);
  }

  async function call(
    route: string,
    request: Omit<UpstreamRequest, 'authorization'>,
    credential: Credential,
    scope: CallScope | undefined,
  ): Promise<{ body: unknown; text: string }> {
    spendUpstreamCall(scope);
    const started = performance.now();
    const what = route.startsWith('/transactions') ? 'transaction' : 'vending';
    // An object, not `let`s: the guarded closure writes it and TS narrowing would not see that.
    const seen: Omit<UpstreamCall, 'method' | 'route' | 'durationMs'> = { outcome: ErrorCode.UPSTREAM_ERROR, attempts: 0 };
    const caller = scope?.caller;
    const traced = options.tracing && startClientSpan(options.tracing, request.method, route);
    try {
      const response = await guarded(async () => {
        seen.attempts = 1;
        const timeoutMs = Math.max(1, options.timeoutMs - (performance.now() - started));
        const answer = await client.send({
          ...request,
          authorization: options.apiKey ?? credential.authorization,
          caller,
          timeoutMs,
          traceHeaders: traced?.headers,
        });
        seen.outcome = answer.status;
        seen.attempts = answer.attempts;
        // Thrown inside the breaker, so that 5xx answers count against the upstream's health.
        if (answer.status < 200 || answer.status >= 300) {
          seen.upstreamMessage = upstreamMessageOf(answer.text);
          throw failureFromStatus(answer.status, what, options.apiKey !== undefined);
        }
        return answer;
      }, caller);
      if (request.method === 'PUT' && response.text.trim() === '') return { body: {}, text: '{}' };
      try {
        return { body: JSON.parse(response.text) as unknown, text: response.text };
      } catch {
        throw refuse.upstreamNotJson(response.status);
      }
    } catch (error) {
      // Its client left: nobody reads this failure, and it says nothing of the upstream.
      if (error instanceof ClientGone) {
        seen.outcome = 'CLIENT_GONE';
        throw refuse.abandoned();
      }
      if (isGatewayError(error) && typeof seen.outcome !== 'number') seen.outcome = error.code;
      throw error;
    } finally {
      if (traced) endClientSpan(traced.span, seen);
      options.onUpstreamCall?.({ method: request.method, route, ...seen, durationMs: performance.now() - started }, scope);
    }
  }

  /**
   * Reads `{data}` with the tolerant reader: a field that drifted is reported,
   * never a failure of the answer; only a body with no `data`, or a resource
   * that is not an object, is the upstream's fault. The result keeps the body's
   * text for the REST passthrough.
   */
  function read<T extends object>(
    route: string,
    { body, text }: { body: unknown; text: string },
    parse: (data: unknown) => T,
    resources: (read: T) => readonly object[],
  ): T {
    let result: T;
    try {
      result = parse(unwrapData(body));
    } catch (error) {
      if (error instanceof ContractViolation) throw refuse.answerOffContract(error.message);
      throw error;
    }
    const drifts = resources(result).flatMap(driftsIn);
    if (drifts.length > 0) options.onContractDrift?.(drifts, route);
    return noteSentAs(result, text);
  }
  const one = <T extends object>(resource: T): readonly object[] => [resource];
  const vendingsRead = (query: VendingQuery) => ({ flatProducts: query.products !== undefined && query.products === options.flatProducts });

  return {
    async getTransaction(id, credential, scope) {
      const answer = await call('/transactions/{id}', { method: 'GET', path: `/transactions/${segment(id)}` }, credential, scope);
      return read('/transactions/{id}', answer, parseTransaction, one);
    },
    async getVending(id, query, credential, scope) {
      const answer = await call(
        '/vendings/{id}',
        { method: 'GET', path: `/vendings/${segment(id)}${productsQuery(query)}` },
        credential,
        scope,
      );
      return read('/vendings/{id}', answer, (data) => parseVending(data, vendingsRead(query)), one);
    },
    async listVendings(query, credential, scope) {
      const answer = await call('/vendings', { method: 'GET', path: `/vendings${productsQuery(query)}` }, credential, scope);
      return read(
        '/vendings',
        answer,
        (data) => parseVendingList(data, vendingsRead(query)),
        (list) => list,
      );
    },
    async updatePayment(id, payment, credential, scope) {
      const path = `/transactions/${segment(id)}/payment`;
      const { body } = await call('/transactions/{id}/payment', { method: 'PUT', path, body: JSON.stringify(payment) }, credential, scope);
      // The contract shows an empty object; anything else that is an object is carried back as sent.
      return isJsonObject(body) ? body : {};
    },
    upstreamState: () => ({ breaker: breaker.state(), inFlight: limiter.inFlight, queued: limiter.queued }),
    // Called once shutdown has waited its time for requests in flight: what is left is cut, not awaited.
    async close() {
      breaker.shutdown();
      await client.destroy();
    },
  };
}
