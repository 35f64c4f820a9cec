import type { FastifyReply, FastifyRequest } from 'fastify';
import type { YogaServerInstance } from 'graphql-yoga';
import type { Route } from '../http/front-door.js';
import type { Caller } from '../backends/caller.js';
import { boundUnsent } from '../http/unsent-bound.js';
import { ErrorCode } from '../errors.js';
import { refusalMessage } from '../refusals/transport-refusals.js';
import { GRAPHIQL_PAGE_POLICY } from './graphiql-page.js';

/*
 * `/graphql` on the front door (yoga serves /graphql only). Every request
 * the front door admitted, whatever its method, headers and media types, is
 * handed to yoga's own handler with the request's scope as yoga's server
 * context: yoga's plugin list (graphql-server.ts) is the one pipeline every
 * operation passes, here as on graphql-ws.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any server and user context: only its HTTP entry point is used here.
type Yoga = YogaServerInstance<any, any>;

export interface GraphQLRouteOptions {
  yoga: Yoga;
  path: string;
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
  // yoga's 406 (a stream of results asked for by a client that takes only whole answers) says nothing but a header.
  if (response.status === 406 && response.body === null) return reply.type('application/json').send(notAcceptable(response));
  if (response.body === null) return reply.send();
  const type = response.headers.get('content-type') ?? '';
  // SSE, and multipart/mixed (incremental delivery and subscriptions over HTTP): each part as it is made.
  const streamed = type.startsWith('text/event-stream') || type.startsWith('multipart/mixed');
  if (!streamed) return reply.send(await response.text());
  // A stream outlives its request: a stopping gateway ends it with the subscriptions instead of waiting for it.
  reply.request.scope.stream = true;
  return reply.send(boundUnsent(response.body, maxUnsentBytes, () => cut(reply)));
}

/** The words of a 406: what the operation's result needs the client to accept (yoga's `accept` header lists it). */
function notAcceptable(response: Response): { errors: Array<{ message: string; extensions: { code: string } }> } {
  const message = refusalMessage.streamNotAccepted(response.headers.get('accept') ?? 'multipart/mixed, text/event-stream');
  return { errors: [{ message, extensions: { code: ErrorCode.BAD_REQUEST } }] };
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

export function graphqlRoute({ yoga, path, guard, graphiql, maxUnsentBytes }: GraphQLRouteOptions): Route {
  return {
    method: ['GET', 'POST', 'OPTIONS'],
    url: path,
    envelope: 'graphql',
    transport: 'graphql',
    operation: 'anonymous',
    // GraphiQL's page and CORS preflights carry no key. Without GraphiQL, yoga would run the GET's document: guarded.
    guard: (request) => (request.method === 'OPTIONS' || (graphiql && isGraphiQLPage(request)) ? undefined : guard(request)),
    async handler(request, reply) {
      const response = await yoga.fetch(`http://localhost${request.url}`, requestInitOf(request), { scope: request.scope });
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
 * The request as yoga's handler takes it: the client's headers, the body
 * the front door already read, and a signal that aborts when the client goes away (ending an SSE stream).
 * Given as a URL and its init rather than a Request, so that a whole answer,
 * which has no signal, costs no AbortController: whatwg-node makes one for
 * every Request whose signal it is asked for.
 */
function requestInitOf(request: FastifyRequest): RequestInit {
  const headers = request.headers as Record<string, string>;
  const bodyless = request.method === 'GET' || request.method === 'HEAD' || request.method === 'OPTIONS';
  const init: RequestInit = { method: request.method, headers };
  if (!bodyless) init.body = request.body instanceof Buffer ? request.body : '';
  // Only a stream outlives its request's body; a whole answer's upstream calls learn that the client left from
  // the scope's caller anyway.
  if ((request.headers.accept ?? '').includes('text/event-stream')) init.signal = signalOf(request.scope.caller);
  return init;
}

/** An abort signal for what only takes one (yoga's Request), aborted when the caller leaves. */
function signalOf(caller: Caller): AbortSignal {
  const aborted = new AbortController();
  caller.onLeft(() => aborted.abort());
  return aborted.signal;
}

/** When yoga answers with GraphiQL's page (its use-graphiql.ts), never reading the request's document. */
function isGraphiQLPage(request: FastifyRequest): boolean {
  return request.method === 'GET' && (request.headers.accept ?? '').includes('text/html');
}
