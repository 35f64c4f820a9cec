import type { GraphQLError, GraphQLFormattedError } from 'graphql';
import { handleStreamOrSingleExecutionResult, maskError, type Plugin } from 'graphql-yoga';
import type { Logger } from '../logging/logger.js';
import { clientError } from './client-result.js';

/*
 * yoga masks the errors of a result (`errors`), but not those of a part
 * delivered later (`@defer`, `@stream`: `incremental[].errors`), which went
 * out as thrown: an upstream's or a bug's own text, with no code. Each such
 * error is masked here as yoga masks the others (its `maskError`, with the
 * configured message; the original is logged), and is sent as a client reads
 * an error (client-result.ts): no HTTP writer reads these parts' marks.
 */

export interface IncrementalMaskingOptions {
  /** The message of a masked error (yoga's `maskedErrors.errorMessage`). */
  errorMessage: string;
  /** Whether masked errors keep their original (yoga's `isDev`): never in production. */
  isDev: boolean;
  /** Where the original of a masked error goes. */
  logger: Logger;
}

type Part = { errors?: ReadonlyArray<GraphQLError | GraphQLFormattedError> };
type WithParts = { incremental?: readonly Part[] };

export function useIncrementalMasking(options: IncrementalMaskingOptions): Plugin {
  const mask = (error: GraphQLError | GraphQLFormattedError): GraphQLFormattedError => {
    const masked = error instanceof Error ? maskError(error, options.errorMessage, options.isDev) : error;
    if (masked !== error) options.logger.error({ err: error }, (error as Error).message);
    return clientError(masked);
  };
  const handle = ({ result, setResult }: { result: unknown; setResult(result: never): void }) => {
    const parts = (result as WithParts).incremental;
    if (!parts?.some((part) => part.errors?.length)) return;
    const incremental = parts.map((part) => (part.errors?.length ? { ...part, errors: part.errors.map(mask) } : part));
    setResult({ ...(result as object), incremental } as never);
  };
  return {
    onExecute: () => ({ onExecuteDone: (payload) => handleStreamOrSingleExecutionResult(payload, handle) }),
  };
}
