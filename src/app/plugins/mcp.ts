import fp from 'fastify-plugin';
import { PERMISSIONS, type Config } from '../../config/config.js';
import { schema } from '../../graphql/schema.js';
import { registerRoutes } from '../../http/front-door.js';
import { allowedHostnames, refuseForeignHosts } from '../../mcp/allowed-hosts.js';
import { mcpEndpoint } from '../../mcp/mcp-route.js';
import { loadOperationTools } from '../../mcp/operation-tools.js';
import { protectedResourceRoutes, type ProtectedResource } from '../../mcp/protected-resource.js';
import { createToolCalls } from '../../mcp/tool-calls.js';
import { version } from '../command-line.js';
import { GRAPHQL_PATH } from './graphql.js';

/*
 * MCP (MCP=read or read+pay): the dashboard's operations as tools for AI
 * assistants at /mcp, each call run by the yoga instance behind /graphql.
 * With MCP=off nothing is registered, and /mcp is a path like any unknown one (404).
 */

export const MCP_PATH = '/mcp';

export const mcpPlugin = fp<{ config: Config }>(
  async (app, { config }) => {
    const mode = config.mcp.tools;
    if (mode === 'off') return;
    // The payment mutation is a tool only with read+pay; the `pay` permission is still asked of each call, as over HTTP.
    const tools = loadOperationTools(schema).filter((tool) => tool.kind === 'query' || mode === 'read+pay');
    const callTool = createToolCalls({
      yoga: app.graphql.yoga,
      path: GRAPHQL_PATH,
      trustedOnly: config.limits.trustedDocuments === 'only',
    });
    const allowedHosts = allowedHostnames({ listenHost: config.host, extra: config.mcp.allowedHosts });
    const resource: ProtectedResource | undefined = config.jwt && {
      path: MCP_PATH,
      authorizationServers: [config.jwt.issuer],
      scopes: config.jwt.permissionsClaim === 'scope' ? [...PERMISSIONS] : undefined,
    };
    const endpoint = mcpEndpoint({
      path: MCP_PATH,
      tools,
      callTool,
      guard: app.auth.guard,
      allowedHosts,
      sessions: config.mcp.sessions,
      resource,
      version: version(),
    });
    registerRoutes(app, [...endpoint.routes, ...(resource ? protectedResourceRoutes(resource, refuseForeignHosts(allowedHosts)) : [])]);
    app.metrics.gauge('mcp_sessions', 'MCP sessions open on this instance', endpoint.sessions);
    app.addHook('onClose', () => endpoint.close());
  },
  { name: 'mcp', dependencies: ['graphql', 'auth', 'metrics'] },
);
