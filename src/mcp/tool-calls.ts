import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { GraphQLServer } from '../graphql/graphql-server.js';
import type { RequestScope } from '../http/request-scope.js';
import { MASKED_MESSAGE } from '../errors.js';
import { refusalMessage } from '../refusals/transport-refusals.js';
import type { OperationTool } from './operation-tools.js';

/*
 * A tool call is a GraphQL request of the caller's, handed to the same yoga
 * instance /graphql hands its requests to (graphql-route.ts), with the
 * request's scope as yoga's server context: the credential the front door
 * admitted, its request id, its upstream budget. So permissions (the payment
 * tool needs `pay`), accounts, limits, cost, trusted documents, metrics and
 * tracing hold exactly as over HTTP: nothing here executes anything.
 */

export interface ToolCallOptions {
  yoga: GraphQLServer;
  /** Where yoga serves GraphQL (`/graphql`). */
  path: string;
  /** TRUSTED_DOCUMENTS=only: a document is named by its hash, as the dashboard names it; else its text is sent. */
  trustedOnly: boolean;
}

interface GraphQLResult {
  data?: Record<string, unknown> | null;
  errors?: Array<{ message?: unknown; extensions?: { code?: unknown } }>;
}

const toolError = (text: string): CallToolResult => ({ isError: true, content: [{ type: 'text', text }] });

/**
 * What is wrong with a call's arguments for its tool's variables, in words an
 * assistant can act on; undefined when nothing is. Types are GraphQL's to judge
 * (its coercion of variables, the one rulebook): only names are checked here,
 * since GraphQL ignores a variable its document does not declare.
 */
export function argumentsProblem(tool: OperationTool, args: Record<string, unknown>): string | undefined {
  const known = tool.inputSchema.properties ?? {};
  const unknown = Object.keys(args).filter((name) => !(name in known));
  if (unknown.length > 0) {
    return refusalMessage.unknownToolArguments(unknown, tool.name, Object.keys(known));
  }
  const missing = (tool.inputSchema.required ?? []).filter((name) => args[name] === undefined || args[name] === null);
  if (missing.length > 0) return refusalMessage.missingToolArguments(missing, tool.name);
  return undefined;
}

/** A GraphQL result as a tool's: the result itself as structured content and as JSON text; an error when it carries any. */
export function toolResultOf(result: GraphQLResult): CallToolResult {
  const errors = (result.errors ?? []).map((error) => {
    const code = error.extensions?.code;
    return { message: typeof error.message === 'string' ? error.message : MASKED_MESSAGE, ...(typeof code === 'string' ? { code } : {}) };
  });
  const structured = { data: result.data ?? null, ...(errors.length > 0 ? { errors } : {}) };
  const lines = errors.map((error) => `${error.code ?? 'ERROR'}: ${error.message}`);
  // A partial result (a field's error beside the others' data) is still an error the assistant should see first.
  return {
    ...(errors.length > 0 ? { isError: true } : {}),
    structuredContent: structured,
    content: [{ type: 'text', text: [...lines, JSON.stringify(structured.data)].join('\n') }],
  };
}

export function createToolCalls({ yoga, path, trustedOnly }: ToolCallOptions) {
  return async function callTool(tool: OperationTool, args: Record<string, unknown>, scope: RequestScope): Promise<CallToolResult> {
    const problem = argumentsProblem(tool, args);
    if (problem) return toolError(problem);
    const params = trustedOnly
      ? { documentId: `sha256:${tool.hash}`, operationName: tool.operationName, variables: args }
      : { query: tool.document, operationName: tool.operationName, variables: args };
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
    const authorization = scope.credential?.authorization;
    if (authorization) headers.authorization = authorization;
    const response = await yoga.fetch(`http://localhost${path}`, { method: 'POST', headers, body: JSON.stringify(params) }, { scope });
    const text = await response.text();
    let result: GraphQLResult;
    try {
      result = JSON.parse(text) as GraphQLResult;
    } catch {
      // yoga answers GraphQL's JSON to a JSON request; anything else is ours to mask.
      scope.log.error({ status: response.status }, 'a tool call got no GraphQL result');
      return toolError(MASKED_MESSAGE);
    }
    return toolResultOf(result);
  };
}

export type CallTool = ReturnType<typeof createToolCalls>;
