import { ContractViolation, isJsonObject } from './parse.js';

/** Success envelopes (part 2): one property `data` holding the resource or the list. */
export interface DataEnvelope<T> {
  data: T;
}

export const dataEnvelope = <T>(data: T): DataEnvelope<T> => ({ data });

/** The `data` of a success envelope; anything else violates the contract. */
export function unwrapData(body: unknown): unknown {
  if (!isJsonObject(body) || !('data' in body)) {
    throw new ContractViolation('response body', ['(root): expected an object with a "data" property']);
  }
  return body.data;
}

/** The message of an error envelope `{errors: {message}}`, when the body is one. */
export function errorMessageOf(body: unknown): string | undefined {
  if (!isJsonObject(body) || !isJsonObject(body.errors)) return undefined;
  const { message } = body.errors;
  return typeof message === 'string' ? message : undefined;
}
