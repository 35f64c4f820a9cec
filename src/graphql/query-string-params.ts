import type { Plugin } from 'graphql-yoga';
import { ErrorCode, GatewayError } from '../errors.js';

/*
 * A GET's `variables` and `extensions` are JSON in the query string. yoga's
 * GET parser reads them with a bare JSON.parse, and takes its SyntaxError for
 * a failure of its own: 500 "Unexpected error.", a stack trace in the log,
 * where a POST body that is not JSON is a 400. They are read here first, and
 * a parameter that is not JSON is refused as a bad request, naming it.
 */

const JSON_PARAMS = ['variables', 'extensions'] as const;

export function useQueryStringParams(): Plugin {
  return {
    onRequestParse({ request, url }) {
      if (request.method !== 'GET') return;
      for (const name of JSON_PARAMS) {
        const text = url.searchParams.get(name);
        if (!text) continue;
        try {
          JSON.parse(text);
        } catch {
          throw new GatewayError(ErrorCode.BAD_REQUEST, `The "${name}" parameter of the query string is not JSON.`, { failsRequest: true });
        }
      }
    },
  };
}
