import type { ExecutionResult, FormattedExecutionResult, GraphQLError, GraphQLFormattedError } from 'graphql';

/*
 * What a client is sent of a result, whatever the transport. yoga marks
 * errors for its own HTTP writer: `extensions.http` (the answer's status and
 * headers: a refusal's 400, a rate limit's 429 and Retry-After) and
 * `extensions.unexpected` (an error its masking replaced). Its writers of HTTP
 * answers drop both (result-processor/stringify.ts, not exported); the writers
 * the gateway owns (graphql-ws, its SSE frames, multipart subscriptions) call
 * this instead, so the rule is the same on every transport and the marks stay
 * where yoga reads them.
 */

/** Extensions only yoga reads. */
const INTERNAL = ['http', 'unexpected'];

type Extensions = Record<string | symbol, unknown>;

/** `extensions` without yoga's marks; undefined when nothing else is left. Symbol keys (a writer's own, never serialised) are kept. */
function publicExtensions(extensions: Extensions | undefined): Extensions | undefined {
  if (!extensions || !INTERNAL.some((key) => key in extensions)) return extensions;
  const kept: Extensions = { ...extensions };
  for (const key of INTERNAL) delete kept[key];
  return Reflect.ownKeys(kept).length > 0 ? kept : undefined;
}

/** One error as its client reads it. */
export function clientError(error: GraphQLError | GraphQLFormattedError): GraphQLFormattedError {
  const formatted: GraphQLFormattedError = 'toJSON' in error ? error.toJSON() : error;
  if (!formatted.extensions || !INTERNAL.some((key) => key in formatted.extensions!)) return formatted;
  const { extensions, ...rest } = formatted;
  const kept = publicExtensions(extensions as Extensions);
  return kept ? { ...rest, extensions: kept } : rest;
}

/** One result as its client reads it: its errors' and its own extensions without yoga's marks. */
export function clientResult(result: ExecutionResult | FormattedExecutionResult): FormattedExecutionResult {
  const extensions = publicExtensions(result.extensions as Extensions | undefined);
  if (!result.errors?.length && extensions === result.extensions) return result;
  const { errors, extensions: _internal, ...rest } = result;
  return {
    ...rest,
    ...(errors ? { errors: errors.map(clientError) } : {}),
    ...(extensions ? { extensions } : {}),
  };
}
