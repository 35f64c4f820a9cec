export interface GraphQLResponse<T = Record<string, unknown>> {
  status: number;
  body: {
    data?: T | null;
    errors?: Array<{ message: string; path?: Array<string | number>; extensions?: { code?: string } }>;
  };
}

/** POSTs one GraphQL operation to a gateway's address (over real HTTP), or with a gateway's own `fetch` (answeringGateway). */
export async function postGraphQL<T = Record<string, any>>(
  target: string | { url: string; fetch: typeof fetch },
  query: string,
  options: { variables?: Record<string, unknown>; key?: string | null } = {},
): Promise<GraphQLResponse<T>> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/graphql-response+json, application/json',
  };
  if (options.key !== null) headers.authorization = options.key ?? 'test-key-1';
  const { url, fetch: send } = typeof target === 'string' ? { url: target, fetch } : target;
  const response = await send(`${url}/graphql`, { method: 'POST', headers, body: JSON.stringify({ query, variables: options.variables }) });
  return { status: response.status, body: (await response.json()) as GraphQLResponse<T>['body'] };
}

export const codesOf = (response: GraphQLResponse): Array<string | undefined> =>
  (response.body.errors ?? []).map((error) => error.extensions?.code);
