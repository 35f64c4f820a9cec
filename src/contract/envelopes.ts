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

/*
 * REST answers the service's 2xx exactly as it sent it: a resource read from
 * a success body keeps that body's text, so the REST passthrough serves the
 * service's own bytes (values, key order, fields unknown or drifted alike)
 * while GraphQL serves what the tolerant reader made of it.
 */
const bodies = new WeakMap<object, string>();

/** Remembers that `resource` (a resource or a list, as read) came from the success body `text`. */
export function noteSentAs<T extends object>(resource: T, text: string): T {
  bodies.set(resource, text);
  return resource;
}

/** The success body `resource` was read from, when it came from the service. */
export const sentAs = (resource: object): string | undefined => bodies.get(resource);
