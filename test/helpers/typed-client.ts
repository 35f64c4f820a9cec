import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
import type { Client } from 'graphql-ws';
import { print } from 'graphql';
import { TEST_KEY } from './gateway.js';
import { subscribe, type QueuedSubscription } from './ws-client.js';

/*
 * Runs the generated typed documents (src/graphql/generated/operations.ts),
 * so a schema change that breaks a dashboard operation breaks a test at
 * compile time.
 */

export interface TypedResult<T> {
  status: number;
  data: T | null | undefined;
  errors: Array<{ message: string; extensions?: { code?: string } }> | undefined;
}

export async function runOperation<T, V extends Record<string, unknown>>(
  url: string,
  document: TypedDocumentNode<T, V>,
  variables: V,
  key: string = TEST_KEY,
): Promise<TypedResult<T>> {
  const response = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: key },
    body: JSON.stringify({ query: print(document), variables }),
  });
  const body = (await response.json()) as { data?: T | null; errors?: TypedResult<T>['errors'] };
  return { status: response.status, data: body.data, errors: body.errors };
}

export function subscribeOperation<T, V extends Record<string, unknown>>(
  client: Client,
  document: TypedDocumentNode<T, V>,
  variables: V,
): QueuedSubscription<T> {
  return subscribe<T>(client, print(document), variables);
}
