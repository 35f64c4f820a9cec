import type { Plugin } from 'graphql-yoga';
import { errorEnvelope } from '../errors.js';
import { jsonResponse } from '../http/json-response.js';
import { guardRoute } from '../http/route-guard.js';
import { createRestHandler, type RestHandlerOptions } from './rest-handler.js';

export interface RestPassthroughOptions extends RestHandlerOptions {
  /** Paths served by something else (GraphQL, webhooks, operations); everything else is REST. */
  reservedPaths: readonly string[];
}

/** The answer to any request outside `reservedPaths`: a contract path's, or a 404 in the contract's error envelope. */
export function createRestResponder(options: RestPassthroughOptions): (request: Request, url: URL) => Promise<Response> {
  const handleRest = createRestHandler(options);
  return (request, url) => {
    const notFound = () => jsonResponse(errorEnvelope(`No route for ${request.method} ${url.pathname}`), 404);
    return guardRoute(async () => (await handleRest(request, url)) ?? notFound(), options.onUnexpectedError);
  };
}

/** Serves the REST contract's paths before yoga looks at the request (those the direct lane did not take). */
export function useRestPassthrough(options: RestPassthroughOptions, respond = createRestResponder(options)): Plugin {
  return {
    // Synchronous for reserved paths, so GraphQL requests do not pay for a promise here.
    onRequest({ request, url, endResponse }) {
      if (options.reservedPaths.includes(url.pathname)) return;
      return respond(request, url).then(endResponse);
    },
  };
}
