import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
import { print } from 'graphql';

/** A failure the dashboard shows in words. */
export class GatewayProblem extends Error {
  constructor(
    message: string,
    readonly code: string | undefined,
  ) {
    super(message);
  }
}

const words: Record<string, string> = {
  UNAUTHENTICATED: 'The gateway does not know this API key.',
  RATE_LIMITED: 'Too many requests with this key; wait a moment.',
  UPSTREAM_UNAVAILABLE: 'The vending service cannot be reached right now.',
  UPSTREAM_TIMEOUT: 'The vending service is too slow to answer right now.',
  UPSTREAM_ERROR: 'The vending service answered with an error.',
  NOT_FOUND: 'That item no longer exists.',
};

export const describeProblem = (code: string | undefined, message: string): string => (code && words[code]) || message;

/** Runs one of the generated dashboard operations against the gateway. */
export async function runQuery<T, V>(document: TypedDocumentNode<T, V>, variables: V, key: string): Promise<T> {
  let response: Response;
  try {
    response = await fetch('/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json, application/json', authorization: key },
      body: JSON.stringify({ query: print(document), variables }),
    });
  } catch {
    throw new GatewayProblem('The gateway cannot be reached. Is it running?', undefined);
  }
  const body = (await response.json().catch(() => ({}))) as {
    data?: T;
    errors?: Array<{ message: string; extensions?: { code?: string } }>;
  };
  const first = body.errors?.[0];
  if (first || !body.data) {
    const code = first?.extensions?.code;
    throw new GatewayProblem(describeProblem(code, first?.message ?? `The gateway answered ${response.status}.`), code);
  }
  return body.data;
}
