import type { Plugin } from 'graphql-yoga';
import type { UpstreamTally } from '../backends/backend.js';
import { requestIdFrom } from '../context.js';
import type { Logger } from '../logging.js';

interface RequestEntry {
  at: number;
  id: string;
  /** Filled by the backend through the request's credential (`Credential.tally`). */
  tally: UpstreamTally;
}

const started = new WeakMap<Request, RequestEntry>();

/** The id of a request, accepted from `x-request-id` or made when it arrived. */
export function requestIdOf(request: Request): string {
  return started.get(request)?.id ?? requestIdFrom(request.headers.get('x-request-id'));
}

/**
 * Where the upstream calls of a request are counted. A tally on the request's
 * credential, rather than an AsyncLocalStorage, because async hooks slow every
 * promise of every request (a third of the GraphQL throughput, measured).
 */
export function upstreamTallyOf(request: Request): UpstreamTally | undefined {
  return started.get(request)?.tally;
}

/**
 * One structured log line per request, and its id echoed as `x-request-id`.
 * While the server shuts down, answers carry `Connection: close` so clients
 * open their next request elsewhere instead of on a socket about to close.
 */
export function useRequestLog(logger: Logger, closing: () => boolean = () => false): Plugin {
  return {
    onRequest({ request }) {
      started.set(request, { at: performance.now(), id: requestIdFrom(request.headers.get('x-request-id')), tally: { upstreamCalls: 0, upstreamMs: 0 } });
    },
    onResponse({ request, response }) {
      const entry = started.get(request);
      if (entry) response.headers.set('x-request-id', entry.id);
      if (closing()) response.headers.set('connection', 'close');
      if (!logger.isLevelEnabled('info')) return;
      logger.info(
        {
          requestId: entry?.id,
          method: request.method,
          path: new URL(request.url).pathname,
          status: response.status,
          durationMs: entry ? Math.round((performance.now() - entry.at) * 10) / 10 : undefined,
          upstreamCalls: entry?.tally.upstreamCalls,
          upstreamMs: entry ? Math.round(entry.tally.upstreamMs * 10) / 10 : undefined,
        },
        'request',
      );
    },
  };
}
