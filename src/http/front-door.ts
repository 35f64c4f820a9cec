import { randomUUID } from 'node:crypto';
import Fastify, { LogController, type FastifyInstance, type FastifyReply, type FastifyRequest, type HTTPMethods } from 'fastify';
import type { Logger } from 'pino';
import { LazyChildLogger } from '../logging/logger.js';
import { context, SpanKind, SpanStatusCode, trace, type Context } from '@opentelemetry/api';
import { contextFromHeaders, traceFields, type Tracing } from '../tracing/tracing.js';
import { errorEnvelope, ErrorCode, isGatewayError, toRestError } from '../errors.js';
import { refusalMessage } from '../refusals/transport-refusals.js';
import { errorBody, maskedAnswer, type Envelope } from './masked-answer.js';
import { newScope, type RequestScope } from './request-scope.js';
import { createReadiness, type Readiness } from './readiness.js';

/*
 * The one front door every HTTP request passes. Fastify's
 * lifecycle runs the same steps for every route, in this order:
 *   onRequest     request id (x-request-id, made when the caller sent none
 *                 or an unusable one), the request's scope (its caller marked as
 *                 left when the connection closes), then the route's guard
 *                 (authentication and rate limit) when it has one
 *   body          read as bytes within MAX_BODY_BYTES (413 past it), as it
 *                 arrives, whatever the route or the media type
 *   handler       the route's
 *   onSend        x-request-id on every answer
 *   onResponse    one log line
 * (features add their own hooks: the shutdown's Connection: close, the metrics)
 * and one error handler, which answers expected failures in the route's
 * envelope and masks everything else (masked-answer.ts).
 */

declare module 'fastify' {
  interface FastifyInstance {
    /** What /readyz answers from: each feature adds the checks it knows. */
    readiness: Readiness;
    /** The requests being answered now (the shutdown waits for those that are not streams). */
    inFlight: ReadonlySet<RequestInFlight>;
  }
  interface FastifyRequest {
    scope: RequestScope;
    /** With tracing on: the context of the request's server span, which its guard and handler run in. */
    traceContext: Context | undefined;
  }
  interface FastifyContextConfig {
    /** How the route words an error: the REST contract's `{errors:{message}}` or GraphQL's `{errors:[…]}`. */
    envelope?: Envelope;
    /** `transport` and `operation` labels of the route's metrics (a template, never a raw path). */
    transport?: string;
    operation?: string;
    /** Runs before the body is read: authentication and rate limiting, for the routes that need them. */
    guard?: (request: FastifyRequest) => Promise<void> | void;
  }
}

/**
 * A request being answered, as the set of those holds it: a cell whose scope
 * goes once the answer is done, so that a finished request's scope is not
 * kept alive by the long-lived set until its next full collection
 * (docs/performance.md, "Cells that let go").
 */
export interface RequestInFlight {
  scope: RequestScope | undefined;
}

export interface Route {
  method: HTTPMethods | HTTPMethods[];
  url: string;
  envelope?: Envelope;
  transport: string;
  operation: string;
  guard?: (request: FastifyRequest) => Promise<void> | void;
  handler(request: FastifyRequest, reply: FastifyReply): unknown;
}

export interface FrontDoorOptions {
  logger: Logger;
  /** Largest body of any request, counted as it arrives. */
  maxBodyBytes: number;
  /** Longest a client may take to send a whole request. */
  requestTimeoutMs: number;
  /** Upstream calls one request may start (its scope's budget). */
  upstreamCallsPerRequest: number;
  /** Longest a client may take to send a request's headers (a WebSocket upgrade's too). */
  headersTimeoutMs: number;
  /** Longest the gateway's stop may take (the grace period and the drain's deadline). */
  stopMs: number;
  /** Told of every failure that was masked. */
  onMasked(error: unknown, request: FastifyRequest): void;
  /** The answer to a path no route serves. */
  notFound(request: FastifyRequest, reply: FastifyReply): unknown;
  /** With tracing on: a server span per request, continuing the caller's `traceparent`. @default off */
  tracing?: Tracing | undefined;
}

/** Routes that get no span: a probe or a scrape every few seconds says nothing about a request. */
const UNTRACED = new Set(['probe', 'metrics']);

/** Front doors whose routes run in their request's trace context (registerRoutes reads it). */
const tracedApps = new WeakSet<FastifyInstance>();

/** `/transactions/:id` as OpenTelemetry's `http.route` writes it: `/transactions/{id}`. */
const routeTemplate = (url: string) => url.replace(/:(\w+)/g, '{$1}');

/**
 * The request's server span, made the context its guard and handler run in;
 * it ends when the connection is done with the answer (or the client left).
 */
function startServerSpan(tracing: Tracing, request: FastifyRequest, reply: FastifyReply): Context {
  const route = request.routeOptions.url;
  const span = tracing.tracer.startSpan(
    route ? `${request.method} ${routeTemplate(route)}` : request.method,
    {
      kind: SpanKind.SERVER,
      attributes: {
        'http.request.method': request.method,
        'url.path': request.url.split('?', 1)[0],
        ...(route ? { 'http.route': routeTemplate(route) } : {}),
        'vending_gateway.request_id': request.id,
      },
    },
    contextFromHeaders(request.headers),
  );
  reply.raw.once('close', () => {
    const status = reply.raw.statusCode;
    span.setAttribute('http.response.status_code', status);
    if (!reply.raw.writableFinished) span.setAttribute('vending_gateway.client_left', true);
    if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    span.end();
  });
  return trace.setSpan(context.active(), span);
}

/** Accepts a caller's `x-request-id` when it is short and printable, else makes one. */
function requestIdFrom(header: unknown): string {
  return typeof header === 'string' && /^[\w.:-]{1,128}$/.test(header) ? header : randomUUID();
}

const round = (ms: number) => Math.round(ms * 10) / 10;

function tooLarge(envelope: Envelope, limit: number): unknown {
  return errorBody(envelope, refusalMessage.bodyTooLarge(limit), ErrorCode.BAD_USER_INPUT);
}

/** What Fastify's bound on a step leaves beyond the stop's own deadlines. */
const STOP_MARGIN_MS = 10_000;

export function createFrontDoor(options: FrontDoorOptions): FastifyInstance {
  const app = Fastify({
    loggerInstance: options.logger,
    // Our own line per request, below; Fastify's pair of lines would double it.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: options.maxBodyBytes,
    requestTimeout: options.requestTimeoutMs,
    // Node checks both timeouts only every `connectionsCheckingInterval` (30 s by default), so a
    // slowloris held a connection 49–57 s; checked every second, it holds it no longer than the timeout
    // and a second. An upgrade's headers are read by the same parser, before ws sees the request.
    http: { headersTimeout: options.headersTimeoutMs, connectionsCheckingInterval: Math.min(1_000, options.headersTimeoutMs) },
    genReqId: (raw) => requestIdFrom(raw.headers['x-request-id']),
    // Made into pino's child, bound to the request id, only when a line is written through it.
    childLoggerFactory: (logger, bindings, childOptions) =>
      new LazyChildLogger(logger as never, bindings, childOptions as Record<string, unknown>) as never,
    // Fastify bounds each start and close step by this (10 s unless told): the stop's own deadlines decide when it
    // ends, so the bound sits past them, else a stop that used its whole deadline failed as a step that never ended.
    pluginTimeout: options.stopMs + STOP_MARGIN_MS,
    // The gateway's shutdown (shutdown.ts) decides what a stopping server answers.
    return503OnClosing: false,
    // Routes judge their own path parameters (an id's bound is 256 bytes, up to 768 characters
    // percent-encoded); the router's default of 100 characters would answer a longer one itself.
    // Node's own limit on a request's head (16 KiB) bounds the path before this.
    routerOptions: { maxParamLength: 16_384 },
    // A path that does not even decode (`/%FF`) is the client's mistake, in the contract's envelope.
    // It is answered before the hooks run, so it carries its request id here.
    frameworkErrors: (_error, request, reply) =>
      void (reply as FastifyReply).code(400).header('x-request-id', request.id).send(errorEnvelope(refusalMessage.pathNotAUrl())),
  });

  // Every route reads its body as bytes and parses it itself: each words its own refusals
  // (yoga for GraphQL, the contract's envelope for REST), and webhook signatures are over the bytes.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));

  app.decorateRequest('scope', null as unknown as RequestScope);
  app.decorate('readiness', createReadiness());
  const inFlight = new Set<RequestInFlight>();
  app.decorate('inFlight', inFlight as ReadonlySet<RequestInFlight>);
  const { tracing } = options;
  if (tracing) {
    tracedApps.add(app as unknown as FastifyInstance);
    app.decorateRequest('traceContext', undefined);
  }
  app.addHook('onRequest', async (request, reply) => {
    if (tracing && !UNTRACED.has(request.routeOptions.config.transport ?? ''))
      request.traceContext = startServerSpan(tracing, request, reply);
    // A declared length over the limit is refused before a byte is read, whatever the method (Fastify reads no GET body).
    if (Number(request.headers['content-length']) > options.maxBodyBytes) {
      return reply.code(413).send(tooLarge(request.routeOptions.config.envelope ?? 'rest', options.maxBodyBytes));
    }
    const scope = newScope(request.id, request.log, options.upstreamCallsPerRequest);
    request.scope = scope;
    const inFlightEntry: RequestInFlight = { scope };
    inFlight.add(inFlightEntry);
    // The connection closed before the answer was written: the client left, its work stops.
    reply.raw.once('close', () => {
      inFlight.delete(inFlightEntry);
      inFlightEntry.scope = undefined;
      if (!reply.raw.writableFinished) scope.caller.markLeft();
    });
    const { guard } = request.routeOptions.config;
    if (guard) await (tracing && request.traceContext ? context.with(request.traceContext, guard, undefined, request) : guard(request));
  });
  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  // The request line is made here of known fields, none of them a credential: redaction (about half of a line's
  // cost, its wildcard paths walking every field) has nothing to find in it.
  const requestLines = options.logger.child({}, { redact: { paths: [] } });
  app.addHook('onResponse', async (request, reply) => {
    if (!options.logger.isLevelEnabled('info')) return;
    const { scope } = request;
    const line = {
      requestId: request.id,
      identity: scope?.credential?.identity?.id,
      method: request.method,
      path: request.url.split('?', 1)[0],
      status: reply.statusCode,
      durationMs: round(reply.elapsedTime),
      upstreamCalls: scope?.tally.upstreamCalls,
      upstreamMs: scope ? round(scope.tally.upstreamMs) : undefined,
    };
    // Written after the request's context was left: its ids are named here.
    if (tracing && request.traceContext) Object.assign(line, traceFields(request.traceContext));
    requestLines.info(line, 'request');
  });

  app.setErrorHandler((error, request, reply) => {
    const envelope = request.routeOptions.config.envelope ?? 'rest';
    const status = (error as { statusCode?: number }).statusCode;
    // Fastify's own refusals of a request (too large, timed out, malformed): the client's doing, worded by us.
    if (!isGatewayError(error) && status !== undefined && status >= 400 && status < 500) {
      if (status === 413) return reply.code(413).send(tooLarge(envelope, options.maxBodyBytes));
      const [message, code] =
        (error as { code?: string }).code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE'
          ? [refusalMessage.notAMediaType(), ErrorCode.BAD_REQUEST]
          : [refusalMessage.unreadableRequest(), ErrorCode.BAD_USER_INPUT];
      return reply.code(status).send(errorBody(envelope, message, code));
    }
    if (isGatewayError(error)) {
      const { status: code, body, headers } = toRestError(error);
      reply.code(code).headers(headers);
      return reply.send(envelope === 'rest' ? body : errorBody(envelope, body.errors.message, error.code));
    }
    options.onMasked(error, request);
    const masked = maskedAnswer(envelope);
    return reply.code(masked.status).send(masked.body);
  });
  app.setNotFoundHandler((request, reply) => options.notFound(request, reply));
  return app as unknown as FastifyInstance;
}

/** The methods a path of ours may be asked with; another one is a 405 naming those it takes. */
const METHODS: HTTPMethods[] = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'];

/**
 * Registers the route table on the front door. A path asked with a method no
 * route of it takes is answered 405 with `Allow`, before any guard runs.
 */
export function registerRoutes(app: FastifyInstance, routes: readonly Route[]): void {
  const taken = new Map<string, { methods: Set<HTTPMethods>; route: Route }>();
  const traced = tracedApps.has(app);
  for (const route of routes) {
    const { method, url, envelope, transport, operation, guard, handler } = route;
    // The body was read outside the request's context (socket events): the handler enters it again.
    const inContext: Route['handler'] = (request, reply) =>
      request.traceContext ? context.with(request.traceContext, handler, undefined, request, reply) : handler(request, reply);
    app.route({ method, url, config: { envelope, transport, operation, guard }, handler: traced ? inContext : handler });
    const entry = taken.get(url) ?? { methods: new Set(), route };
    for (const each of [method].flat()) entry.methods.add(each);
    taken.set(url, entry);
  }
  for (const [url, { methods, route }] of taken) {
    const others = METHODS.filter((method) => !methods.has(method));
    if (others.length === 0) continue;
    const allow = [...methods].join(', ');
    app.route({
      method: others,
      url,
      config: { envelope: route.envelope, transport: route.transport, operation: 'other' },
      handler: (request, reply) => {
        return reply
          .code(405)
          .header('allow', allow)
          .send(errorBody(route.envelope ?? 'rest', refusalMessage.methodNotAllowed(request.method, allow)));
      },
    });
  }
}
