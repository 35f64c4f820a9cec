import type { IncomingMessage } from 'node:http';
import { GraphQLError, type ExecutionResult } from 'graphql';
import { createGraphQLError, maskError, processRegularResult, type YogaServerInstance } from 'graphql-yoga';
import type { DirectResponder } from './direct-lane.js';

/*
 * Which GraphQL requests the direct lane takes, answered with yoga's own
 * engine: `getResultForParams` runs every params hook (trusted documents,
 * query limits, metrics) and the envelop pipeline (parse and validation
 * caches, GraphQL Armor, error masking, our context), and
 * `processRegularResult` is yoga's own JSON writer. Everything else (other
 * media types, subscriptions, parameters yoga would refuse, in its own
 * words) goes to yoga.
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
]);

const isObject = (value: unknown): value is Params => typeof value === 'object' && value !== null && !Array.isArray(value);
const optional = (value: unknown, check: (v: unknown) => boolean) => value === undefined || value === null || check(value);

/** The media type to answer with when the request's headers are the lane's, else undefined. */
export function graphqlLaneMediaType(req: IncomingMessage, path: string): string | undefined {
  if (req.method !== 'POST' || req.url !== path || req.headers.origin !== undefined) return undefined;
  if (!JSON_BODY.test(req.headers['content-type'] ?? '')) return undefined;
  return ACCEPTED.get((req.headers.accept ?? '').replace(/\s/g, '').toLowerCase());
}

/** The body's parameters when yoga would take them as they are and they are not a subscription, else undefined. */
export function graphqlLaneParams(body: Buffer): Params | undefined {
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
  if (!optional(variables, isObject) || !optional(extensions, isObject) || !optional(operationName, (v) => typeof v === 'string')) return undefined;
  return params;
}

export type LaneYoga = Pick<YogaServerInstance<Record<string, unknown>, Record<string, unknown>>, 'getResultForParams' | 'fetchAPI'>;

/** How yoga is told to mask errors (its `maskedErrors` option); the lane masks what it catches the same way. */
export interface LaneMasking {
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
function thrownResult(error: unknown, masking: LaneMasking): ExecutionResult {
  const thrown: unknown[] = error instanceof AggregateError ? error.errors : [error];
  const errors = thrown.map((each): GraphQLError => {
    const masked = maskError(each, masking.errorMessage, masking.isDev);
    if (masked !== each) masking.onMasked(each);
    return masked instanceof GraphQLError ? masked : createGraphQLError(masked.message, { originalError: masked });
  });
  return { errors };
}

export function graphqlResponder(yoga: LaneYoga, masking: LaneMasking, params: Params, mediaType: string): DirectResponder {
  return async (request) => {
    let result: ExecutionResult;
    try {
      result = (await yoga.getResultForParams({ params, request }, { request })) as ExecutionResult;
    } catch (error) {
      result = thrownResult(error, masking);
    }
    return processRegularResult(result, yoga.fetchAPI, mediaType);
  };
}
