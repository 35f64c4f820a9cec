export interface GraphQLResponse<T = Record<string, unknown>> {
  status: number;
  body: {
    data?: T | null;
    errors?: Array<{ message: string; path?: Array<string | number>; extensions?: { code?: string } }>;
  };
}

/** POSTs one GraphQL operation over real HTTP. */
export async function postGraphQL<T = Record<string, any>>(
  url: string,
  query: string,
  options: { variables?: Record<string, unknown>; key?: string | null } = {},
): Promise<GraphQLResponse<T>> {
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/graphql-response+json, application/json' };
  if (options.key !== null) headers.authorization = options.key ?? 'test-key-1';
  const response = await fetch(`${url}/graphql`, { method: 'POST', headers, body: JSON.stringify({ query, variables: options.variables }) });
  return { status: response.status, body: (await response.json()) as GraphQLResponse<T>['body'] };
}

export const codesOf = (response: GraphQLResponse): Array<string | undefined> =>
  (response.body.errors ?? []).map((error) => error.extensions?.code);
