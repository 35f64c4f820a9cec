import type { Plugin } from 'graphql-yoga';
import { requestIdFrom } from '../context.js';
import type { Logger } from '../logging.js';
import { currentRequestStats } from './request-stats.js';

const started = new WeakMap<Request, { at: number; id: string }>();

/** The id of a request, accepted from `x-request-id` or made when it arrived. */
export function requestIdOf(request: Request): string {
  return started.get(request)?.id ?? requestIdFrom(request.headers.get('x-request-id'));
}

/**
 * One structured log line per request, and its id echoed as `x-request-id`.
 * While the server shuts down, answers carry `Connection: close` so clients
 * open their next request elsewhere instead of on a socket about to close.
 */
export function useRequestLog(logger: Logger, closing: () => boolean = () => false): Plugin {
  return {
    onRequest({ request }) {
      started.set(request, { at: performance.now(), id: requestIdFrom(request.headers.get('x-request-id')) });
    },
    onResponse({ request, response }) {
      const entry = started.get(request);
      const url = new URL(request.url);
      const stats = currentRequestStats();
      if (entry) response.headers.set('x-request-id', entry.id);
      if (closing()) response.headers.set('connection', 'close');
      logger.info(
        {
          requestId: entry?.id,
          method: request.method,
          path: url.pathname,
          status: response.status,
          durationMs: entry ? Math.round((performance.now() - entry.at) * 10) / 10 : undefined,
          upstreamCalls: stats?.upstreamCalls,
          upstreamMs: stats ? Math.round(stats.upstreamMs * 10) / 10 : undefined,
        },
        'request',
      );
    },
  };
}
