/*
 * The one answer to an unexpected failure, on every route: its text and stack
 * go to the log, never to the client (unexpected errors are
 * masked). Each route words it in its own envelope.
 */

/** How a route words errors: the REST contract's (part 7) or GraphQL's. */
export type Envelope = 'rest' | 'graphql';

export const MASKED_MESSAGE = 'Unexpected error.';

export function maskedAnswer(envelope: Envelope): { status: 500; body: unknown } {
  return {
    status: 500,
    body: envelope === 'graphql' ? { errors: [{ message: MASKED_MESSAGE }] } : { errors: { message: MASKED_MESSAGE } },
  };
}
