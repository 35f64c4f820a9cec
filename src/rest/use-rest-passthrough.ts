import type { Plugin } from 'graphql-yoga';
import { errorEnvelope } from '../errors.js';
import { jsonResponse } from '../http/json-response.js';
import { guardRoute } from '../http/route-guard.js';
import { createRestHandler, type RestHandlerOptions } from './rest-handler.js';

export interface RestPassthroughOptions extends RestHandlerOptions {
  /** Paths served by something else (GraphQL, webhooks, operations); everything else is REST. */
  reservedPaths: readonly string[];
}

/**
 * Serves the REST contract's paths before yoga looks at the request; any other
 * path outside `reservedPaths` is a 404 in the contract's error envelope.
 */
export function useRestPassthrough(options: RestPassthroughOptions): Plugin {
  const handleRest = createRestHandler(options);
  return {
    // Synchronous for reserved paths, so GraphQL requests do not pay for a promise here.
    onRequest({ request, url, endResponse }) {
      if (options.reservedPaths.includes(url.pathname)) return;
      const notFound = () => jsonResponse(errorEnvelope(`No route for ${request.method} ${url.pathname}`), 404);
      return guardRoute(async () => (await handleRest(request, url)) ?? notFound(), options.onUnexpectedError).then(endResponse);
    },
  };
}
