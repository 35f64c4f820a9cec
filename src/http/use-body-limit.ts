import { createGraphQLError, type Plugin } from 'graphql-yoga';
import { errorEnvelope } from '../errors.js';
import { jsonResponse } from './json-response.js';
import { BodyTooLarge, readBodyText } from './read-body.js';

/*
 * One body-size bound for every route. A declared Content-Length over it is
 * refused before a byte is read; a chunked GraphQL body is counted as it
 * arrives (the REST and webhook routes count theirs themselves).
 */

const tooLarge = (limit: number) => `Request body is larger than ${limit} bytes`;

export function useBodyLimit(maxBytes: number, graphqlPath: string): Plugin {
  return {
    onRequest({ request, url, endResponse }) {
      const declared = Number(request.headers.get('content-length'));
      if (!Number.isFinite(declared) || declared <= maxBytes) return;
      endResponse(
        url.pathname === graphqlPath
          ? jsonResponse({ errors: [{ message: tooLarge(maxBytes), extensions: { code: 'BAD_USER_INPUT' } }] }, 413)
          : jsonResponse(errorEnvelope(tooLarge(maxBytes)), 413),
      );
    },
    // Yoga's own limit (`maxRequestBodySize`) is off: it pipes every body, even a
    // small one already in memory, through a stream per request. Bodies without a
    // length (chunked) are the only ones whose size is not known up front.
    onRequestParse({ request, requestParser, setRequestParser }) {
      if (request.method !== 'POST' || request.headers.has('content-length') || !request.body) return;
      const readLimited = async (req: Request): Promise<string> => {
        try {
          return await readBodyText(req, maxBytes);
        } catch (error) {
          if (!(error instanceof BodyTooLarge)) throw error;
          throw createGraphQLError(tooLarge(maxBytes), { extensions: { code: 'BAD_USER_INPUT', http: { status: 413 } } });
        }
      };
      if ((request.headers.get('content-type') ?? '').includes('json')) {
        setRequestParser(async (req) => {
          const text = await readLimited(req);
          try {
            return JSON.parse(text);
          } catch {
            throw createGraphQLError('Request body is not valid JSON', { extensions: { code: 'BAD_USER_INPUT', http: { status: 400 } } });
          }
        });
        return;
      }
      // Other media types keep yoga's parser, given the body once it is known to be within the limit.
      if (!requestParser) return;
      setRequestParser(async (req) =>
        requestParser(new Request(req.url, { method: req.method, headers: req.headers, body: await readLimited(req) })),
      );
    },
  };
}
