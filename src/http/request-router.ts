import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Plugin } from 'graphql-yoga';
import { errorEnvelope } from '../errors.js';
import { matchRoute } from '../rest/routes.js';
import { createDirectLane, type DirectResponder } from './direct-lane.js';
import { graphqlLaneMediaType, graphqlLaneParams, graphqlResponder, type LaneMasking, type LaneYoga } from './graphql-lane.js';
import { jsonResponse } from './json-response.js';
import { hasSmallBody, readSmallBody } from './small-body.js';

/*
 * Chooses, per request, between the direct lane (direct-lane.ts) and yoga's
 * Fetch adapter. The lane takes plain GraphQL queries and mutations and the
 * REST contract's paths from clients that send no Origin: a browser's
 * requests, and every OPTIONS, need yoga's CORS answers. Yoga takes the rest,
 * and every request whose body is large or chunked, where its body limit
 * counts bytes as they arrive.
 */

type NodeHandler = (req: IncomingMessage, res: ServerResponse) => unknown;

export interface RequestRouterOptions {
  yoga: LaneYoga & NodeHandler;
  /** Adapter-level plugins that must see every request on the lane too (request log, metrics), in order. */
  laneHooks: Plugin[];
  graphqlPath: string;
  masking: LaneMasking;
  rest: DirectResponder;
  /** @default true; false sends every request to yoga (the benchmarks compare the two). */
  enabled?: boolean;
}

/** Only the path and query of a request are read, so one fixed origin serves (a Host header is not trusted to parse). */
const ORIGIN = 'http://localhost';

export function createRequestRouter({ yoga, laneHooks, graphqlPath, masking, rest, enabled = true }: RequestRouterOptions): NodeHandler {
  const lane = createDirectLane({
    hooks: laneHooks,
    // What yoga's masking and the REST routes' guard answer to a failure, in each route's own envelope.
    onUnexpectedError(error, request) {
      masking.onMasked(error);
      const graphql = new URL(request.url).pathname === graphqlPath;
      return jsonResponse(graphql ? { errors: [{ message: masking.errorMessage }] } : errorEnvelope(masking.errorMessage), 500);
    },
  });
  // The adapter takes a body read up front from `req.body`.
  const toYoga = (req: IncomingMessage, res: ServerResponse, body?: Buffer) => {
    if (body) (req as IncomingMessage & { body?: Buffer }).body = body;
    return yoga(req, res);
  };

  function route(req: IncomingMessage, res: ServerResponse, body: Buffer | undefined): unknown {
    const mediaType = graphqlLaneMediaType(req, graphqlPath);
    if (mediaType && body) {
      const params = graphqlLaneParams(body);
      if (params) return lane(req, res, new URL(graphqlPath, ORIGIN), graphqlResponder(yoga, masking, params, mediaType), body);
      return toYoga(req, res, body);
    }
    // OPTIONS is yoga's CORS preflight answer, Origin or not.
    if (req.headers.origin !== undefined || req.method === 'OPTIONS') return toYoga(req, res, body);
    // Only the contract's own paths: the dashboard, probes and unknown paths keep yoga's answers.
    let url: URL;
    try {
      url = new URL(req.url ?? '/', ORIGIN);
    } catch {
      return toYoga(req, res, body);
    }
    if (matchRoute(req.method ?? 'GET', url.pathname).kind === 'unknown') return toYoga(req, res, body);
    return lane(req, res, url, rest, body);
  }

  return (req, res) => {
    if (!enabled) return yoga(req, res);
    const hasBody = req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined;
    if (!hasBody || req.headers['content-length'] === '0') return route(req, res, undefined);
    if (!hasSmallBody(req)) return yoga(req, res);
    readSmallBody(req, (body) => void route(req, res, body));
  };
}
