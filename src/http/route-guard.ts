import { errorEnvelope } from '../errors.js';
import { jsonResponse } from './json-response.js';

/**
 * Runs a route handler so that nothing it throws reaches the client as a
 * stack trace: the server would otherwise answer a plain-text 500 with one.
 */
export async function guardRoute(handle: () => Promise<Response>, onUnexpectedError: (error: unknown) => void): Promise<Response> {
  try {
    return await handle();
  } catch (error) {
    onUnexpectedError(error);
    return jsonResponse(errorEnvelope('Unexpected error.'), 500);
  }
}
