import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import {
  CallToolRequestSchema,
  ErrorCode as RpcErrorCode,
  ListToolsRequestSchema,
  McpError,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import type { RequestScope } from '../http/request-scope.js';
import { refusalMessage } from '../refusals/transport-refusals.js';
import { MASKED_MESSAGE } from '../errors.js';
import type { OperationTool } from './operation-tools.js';
import type { CallTool } from './tool-calls.js';

/*
 * One MCP server per session (the SDK connects a server to one transport),
 * offering the operations' tools. Their input schemas are JSON Schema made
 * from GraphQL (input-schema.ts), so the tools are answered through the SDK's
 * request handlers rather than `registerTool`, which takes zod schemas.
 */

const INSTRUCTIONS =
  "Tools of a vending-machine gateway: each runs one of the dashboard's GraphQL operations with your key's permissions and " +
  'account, and answers its result as JSON (`data`, and `errors` with a code each). Stuck payments are `recent_transactions` ' +
  'with `status: ["pending"]` and an `until` some minutes ago.';

/** What the route hands a tool call: the scope of the HTTP request that carries it. */
export interface CallerInfo {
  scope: RequestScope;
}

function described(tool: OperationTool): Tool {
  const reads = tool.kind === 'query';
  return {
    name: tool.name,
    title: tool.title,
    description: tool.description,
    inputSchema: tool.inputSchema as Tool['inputSchema'],
    annotations: { readOnlyHint: reads, destructiveHint: false, idempotentHint: reads, openWorldHint: false },
  };
}

/** @param version the gateway's, as `--version` prints it: what `initialize` answers as `serverInfo.version`. */
export function createSessionServer(tools: readonly OperationTool[], callTool: CallTool, version: string): McpServer {
  const byName = new Map(tools.map((tool) => [tool.name, tool]));
  const listed = tools.map(described);
  // Declared on the inner server: McpServer given the capability would install its own tool handlers (and say the list changes).
  const mcp = new McpServer({ name: 'vending-gateway', version }, { instructions: INSTRUCTIONS });
  mcp.server.registerCapabilities({ tools: { listChanged: false } });
  mcp.server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: listed }));
  mcp.server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const tool = byName.get(request.params.name);
    if (!tool) {
      throw new McpError(RpcErrorCode.InvalidParams, refusalMessage.unknownTool(request.params.name, listed.length));
    }
    const caller = extra.authInfo?.extra as CallerInfo | undefined;
    // The route passes every request's scope; a message without one did not come through it.
    if (!caller) throw new McpError(RpcErrorCode.InternalError, refusalMessage.toolCallWithoutRequest());
    try {
      return await callTool(tool, request.params.arguments ?? {}, caller.scope);
    } catch (error) {
      // The SDK would answer a thrown error with its message: what failed goes to the log, the client gets the masked words.
      caller.scope.log.error({ err: error, tool: tool.name }, 'a tool call failed');
      return { isError: true, content: [{ type: 'text' as const, text: MASKED_MESSAGE }] };
    }
  });
  return mcp;
}
