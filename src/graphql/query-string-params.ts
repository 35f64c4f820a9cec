import type { Plugin } from 'graphql-yoga';
import { refuse } from '../refusals/refusals.js';

/*
 * A GET's `variables` and `extensions` are JSON in the query string. yoga's
 * GET parser reads them with a bare JSON.parse, and takes its SyntaxError for
 * a failure of its own: 500 "Unexpected error.", a stack trace in the log,
 * where a POST body that is not JSON is a 400. Its parser is kept and wrapped:
 * that SyntaxError is refused as a bad request naming the parameter, which is
 * looked for only then, so a good request is parsed once.
 */

const JSON_PARAMS = ['variables', 'extensions'] as const;

const isJson = (text: string | null): boolean => {
  if (!text) return true;
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
};

export function useQueryStringParams(): Plugin {
  return {
    onRequestParse({ request, url, requestParser, setRequestParser }) {
      if (request.method !== 'GET' || !requestParser) return;
      setRequestParser(async (sent) => {
        try {
          return await requestParser(sent);
        } catch (error) {
          const name = error instanceof SyntaxError ? JSON_PARAMS.find((param) => !isJson(url.searchParams.get(param))) : undefined;
          if (name === undefined) throw error;
          throw refuse.queryParamNotJson(name);
        }
      });
    },
  };
}
