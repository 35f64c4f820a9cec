import type { FastifyReply, FastifyRequest } from 'fastify';
import { GraphQLError, type ExecutionResult } from 'graphql';
import { createGraphQLError, maskError, processRegularResult, type YogaServerInstance } from 'graphql-yoga';
import type { Route } from '../http/front-door.js';
import { scopeOfRequest, type RequestScope } from '../http/request-scope.js';
import type { Owner } from '../backends/owner.js';
import { boundUnsent } from '../http/unsent-bound.js';
import { GRAPHIQL_PAGE_POLICY } from './graphiql-page.js';
import type { OperationPlans } from './operation-plans.js';

/*
 * `/graphql` on the front door (yoga serves /graphql only). A
 * plain query or mutation (a JSON POST from a client that sends no Origin,
 * asking for JSON) is answered with yoga's own engine for its parsed
 * parameters: `getResultForParams` runs every params hook (trusted documents,
 * query limits, metrics) and the envelop pipeline (parse and validation
 * caches, GraphQL Armor, error masking, our context), and
 * `processRegularResult` is yoga's own JSON writer. Everything else (GraphiQL,
 * SSE, CORS, other media types, subscriptions, parameters yoga would refuse,
 * in its own words) goes through yoga's whole HTTP handler. What the fast
 * path skips is only yoga's Fetch adapter, more than half of a small query's
 * CPU here (bench/RESULTS.md); the front door's steps hold on both.
 *
 * Before yoga, the fast path asks the response cache for a result it holds
 * for these parameters and this credential (`heldResult`): such a result is
 * answered from bytes yoga's own writer made once for it, with its ETag, so
 * a hit runs no GraphQL at all. The front door's steps (authentication, rate
 * limit, the log line and metrics) hold on it as on any answer, and the
 * cache holds nothing for a credential that may not read.
 */

type Params = Record<string, unknown>;

const PARAM_NAMES = new Set(['query', 'variables', 'operationName', 'extensions']);
// Exactly as yoga matches it (case and all); anything else, yoga words the refusal.
const JSON_BODY = /^application\/json(?:;\s*charset=utf-8)?$/;
/** Accept headers taken here, with the media type yoga answers them with. */
const ACCEPTED = new Map<string, string>([
  ['', 'application/json'],
  ['*/*', 'application/json'],
  ['application/json', 'application/json'],
  ['application/json;charset=utf-8', 'application/json'],
  ['application/graphql-response+json', 'application/graphql-response+json'],
  ['application/graphql-response+json;charset=utf-8', 'application/graphql-response+json'],
  // What Apollo Client and urql send by default (GraphQL over HTTP's recommendation): yoga answers the first.
  ['application/graphql-response+json,application/json;q=0.9', 'application/graphql-response+json'],
  ['application/graphql-response+json,application/json', 'application/graphql-response+json'],
]);

const isObject = (value: unknown): value is Params => typeof value === 'object' && value !== null && !Array.isArray(value);
const optional = (value: unknown, check: (v: unknown) => boolean) => value === undefined || value === null || check(value);

/** The media type to answer with when the request's headers are the fast path's, else undefined. */
function fastMediaType(request: FastifyRequest, path: string): string | undefined {
  if (request.method !== 'POST' || request.url !== path || request.headers.origin !== undefined) return undefined;
  // Revalidation (a 304 from the response cache) is answered in yoga's request hooks.
  if (request.headers['if-none-match'] !== undefined) return undefined;
  if (!JSON_BODY.test(request.scope.contentType ?? '')) return undefined;
  return ACCEPTED.get((request.headers.accept ?? '').replace(/\s/g, '').toLowerCase());
}

/** The body's parameters when yoga would take them as they are and they are not a subscription, else undefined. */
function fastParams(body: Buffer): (Params & { query: string }) | undefined {
  let params: unknown;
  try {
    params = JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
  if (!isObject(params)) return undefined;
  for (const key in params) if (!PARAM_NAMES.has(key)) return undefined;
  const { query, variables, operationName, extensions } = params;
  // A subscription answers with a stream, which is yoga's to write; the word alone is enough to send it there.
  if (typeof query !== 'string' || /\bsubscription\b/.test(query)) return undefined;
  if (!optional(variables, isObject) || !optional(extensions, isObject) || !optional(operationName, (v) => typeof v === 'string'))
    return undefined;
  return params as Params & { query: string };
}

/** How yoga is told to mask errors (its `maskedErrors` option); the fast path masks what it catches the same way. */
export interface GraphQLMasking {
  errorMessage: string;
  isDev: boolean;
  /** Told of an error that was masked, as yoga's logger is. */
  onMasked(error: unknown): void;
}

/**
 * What yoga answers for an error thrown before execution (a params hook's
 * refusal, such as an unknown trusted document): each error masked, as its
 * own handler does, then written like any result.
 */
function thrownResult(error: unknown, masking: GraphQLMasking): ExecutionResult {
  const thrown: unknown[] = error instanceof AggregateError ? error.errors : [error];
  const errors = thrown.map((each): GraphQLError => {
    const masked = maskError(each, masking.errorMessage, masking.isDev);
    if (masked !== each) masking.onMasked(each);
    return masked instanceof GraphQLError ? masked : createGraphQLError(masked.message, { originalError: masked });
  });
  return { errors };
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any server and user context: only its HTTP entry points are used here.
type Yoga = YogaServerInstance<any, any>;

/** A held result's answer as yoga writes it, per media type: made once, then sent as it is. */
interface ReadyAnswer {
  status: number;
  headers: Array<[string, string]>;
  body: string;
}

const readyAnswers = new WeakMap<ExecutionResult, Map<string, ReadyAnswer>>();

async function readyAnswerOf(result: ExecutionResult, mediaType: string, yoga: Yoga): Promise<ReadyAnswer> {
  let byType = readyAnswers.get(result);
  if (!byType) readyAnswers.set(result, (byType = new Map<string, ReadyAnswer>()));
  let ready = byType.get(mediaType);
  if (!ready) {
    // The plugin serves a copy of what it holds, and so yoga's writer gets one here (held results are never written to).
    const response = processRegularResult({ ...result }, yoga.fetchAPI, mediaType);
    const headers: Array<[string, string]> = [];
    response.headers.forEach((value, key) => void headers.push([key, value]));
    ready = { status: response.status, headers, body: await response.text() };
    byType.set(mediaType, ready);
  }
  return ready;
}

export interface GraphQLRouteOptions {
  yoga: Yoga;
  /**
   * The result the response cache holds for a fast-path request's parameters, once the guard admitted it; none
   * without a response cache. It names the operation for the metrics as yoga's path does.
   */
  heldResult?: ((params: Params & { query: string }, scope: RequestScope) => ExecutionResult | undefined) | undefined;
  path: string;
  masking: GraphQLMasking;
  /** Runs a fast-path request from its plan (operation-plans.ts), once the guard admitted it; none without plans. */
  plans?: Pick<OperationPlans, 'run' | 'replay'> | undefined;
  /** Plain queries through yoga's engine without its Fetch adapter. @default true (benchmarks compare both) */
  fastPath?: boolean;
  /** The front door's guard for /graphql: authentication and rate limit (not for the GraphiQL page). */
  guard(request: FastifyRequest): Promise<void>;
  /** Whether yoga serves GraphiQL: only then does a browser's GET pass without a key, to get the page. */
  graphiql: boolean;
  /** Bytes of an SSE stream its client may leave unread before the stream is cut (`maxUnsentBytes`, four times MAX_BODY_BYTES). */
  maxUnsentBytes: number;
}

/**
 * Writes yoga's Response: streamed when it is a stream of results (SSE),
 * cut once its client leaves more than `maxUnsentBytes` unread, else whole,
 * as text (piping a web stream through Node costs a result more than the
 * rest of its answer).
 */
async function send(reply: FastifyReply, response: Response, maxUnsentBytes: number): Promise<FastifyReply> {
  reply.code(response.status);
  response.headers.forEach((value, key) => void reply.header(key, value));
  if (response.body === null) return reply.send();
  const streamed = (response.headers.get('content-type') ?? '').startsWith('text/event-stream');
  if (!streamed) return reply.send(await response.text());
  // A stream outlives its request: a stopping gateway ends it with the subscriptions instead of waiting for it.
  reply.request.scope.stream = true;
  return reply.send(boundUnsent(response.body, maxUnsentBytes, () => cut(reply)));
}

/**
 * Closes the connection of a client that stopped reading with a reset: a
 * plain close would queue its FIN behind what the kernel still holds for the
 * client, and hold all that for as long as the client does not read.
 */
function cut(reply: FastifyReply): void {
  const socket = reply.raw.socket;
  if (socket && !socket.destroyed) socket.resetAndDestroy();
  else reply.raw.destroy();
}

export function graphqlRoute({
  yoga,
  heldResult,
  plans,
  path,
  masking,
  fastPath = true,
  guard,
  graphiql,
  maxUnsentBytes,
}: GraphQLRouteOptions): Route {
  // Only the path and query are read: a fixed origin serves (a Host header is not trusted to parse).
  const origin = 'http://localhost';
  return {
    method: ['GET', 'POST', 'OPTIONS'],
    url: path,
    envelope: 'graphql',
    transport: 'graphql',
    operation: 'anonymous',
    // GraphiQL's page and CORS preflights carry no key. Without GraphiQL, yoga would run the GET's document: guarded.
    guard: (request) => (request.method === 'OPTIONS' || (graphiql && isGraphiQLPage(request)) ? undefined : guard(request)),
    async handler(request, reply) {
      const mediaType = fastPath ? fastMediaType(request, path) : undefined;
      const params = mediaType && request.body instanceof Buffer ? fastParams(request.body) : undefined;
      if (mediaType && params) {
        const held = heldResult?.(params, request.scope);
        if (held) {
          const ready = await readyAnswerOf(held, mediaType, yoga);
          reply.code(ready.status);
          for (const [key, value] of ready.headers) void reply.header(key, value);
          return reply.send(ready.body);
        }
        const planned = await plans?.run(params, request.scope);
        // A result that is only data, as yoga's writer makes it; one with errors is shaped by yoga's path (below).
        if (planned && 'result' in planned) return reply.type(`${mediaType}; charset=utf-8`).send(JSON.stringify(planned.result));
        const headers = { ...request.headers, 'content-type': request.scope.contentType } as unknown as Record<string, string>;
        const fetchRequest = new yoga.fetchAPI.Request(origin + path, { method: 'POST', headers });
        scopeOfRequest.set(fetchRequest, request.scope);
        if (planned) plans?.replay(fetchRequest, planned.replay);
        let result: ExecutionResult;
        try {
          result = (await yoga.getResultForParams({ params, request: fetchRequest }, {})) as ExecutionResult;
        } catch (error) {
          result = thrownResult(error, masking);
        }
        return send(reply, processRegularResult(result, yoga.fetchAPI, mediaType), maxUnsentBytes);
      }
      const fetchRequest = fetchRequestOf(request, yoga);
      scopeOfRequest.set(fetchRequest, request.scope);
      const response = await yoga.fetch(fetchRequest);
      if (graphiql && (response.headers.get('content-type') ?? '').startsWith('text/html')) {
        reply.headers({
          'content-security-policy': GRAPHIQL_PAGE_POLICY,
          'x-content-type-options': 'nosniff',
          'referrer-policy': 'no-referrer',
        });
      }
      return send(reply, response, maxUnsentBytes);
    },
  };
}

/**
 * The request as yoga's handler takes it: the body the front door already
 * read, the media type as the client sent it (the front door set it aside),
 * and a signal that aborts when the client goes away (ending an SSE stream).
 */
function fetchRequestOf(request: FastifyRequest, yoga: Yoga): Request {
  const headers = { ...request.headers, 'content-type': request.scope.contentType } as unknown as Record<string, string>;
  if (request.scope.contentType === undefined) delete headers['content-type'];
  const bodyless = request.method === 'GET' || request.method === 'HEAD' || request.method === 'OPTIONS';
  return new yoga.fetchAPI.Request(`http://localhost${request.url}`, {
    method: request.method,
    headers,
    body: bodyless ? undefined : request.body instanceof Buffer ? request.body : '',
    // Only a stream outlives its request's body: a whole answer needs no signal (one costs a request ~5 µs);
    // its upstream calls learn that the client left from the scope's owner anyway.
    signal: (request.headers.accept ?? '').includes('text/event-stream') ? signalOf(request.scope.owner) : undefined,
  });
}

/** An abort signal for what only takes one (yoga's Request), aborted when the owner's client leaves. */
function signalOf(owner: Owner): AbortSignal {
  const aborted = new AbortController();
  owner.onGone(() => aborted.abort());
  return aborted.signal;
}

/** When yoga answers with GraphiQL's page (its use-graphiql.ts), never reading the request's document. */
function isGraphiQLPage(request: FastifyRequest): boolean {
  return request.method === 'GET' && (request.headers.accept ?? '').includes('text/html');
}
