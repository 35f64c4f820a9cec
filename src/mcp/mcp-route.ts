import { randomUUID } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import type { Credential } from '../backends/backend.js';
import { ErrorCode, isGatewayError } from '../errors.js';
import { refuse } from '../refusals/refusals.js';
import { refusalMessage } from '../refusals/transport-refusals.js';
import type { Route } from '../http/front-door.js';
import { refuseForeignHosts } from './allowed-hosts.js';
import { createSessionServer, type CallerInfo } from './mcp-server.js';
import { createMcpSessions, type McpSession } from './mcp-sessions.js';
import type { OperationTool } from './operation-tools.js';
import { challengeOf, type ProtectedResource } from './protected-resource.js';
import type { CallTool } from './tool-calls.js';

/*
 * `/mcp` on the front door: MCP's streamable HTTP transport (the SDK's
 * web-standard one, so the answer is written the way /graphql writes yoga's:
 * through Fastify's reply, its onSend and onResponse hooks included). Each
 * request passed the route's guard first: the Host and Origin it names
 * (allowed-hosts.ts), then the gateway's authentication and rate limit.
 * Answers are whole JSON (`enableJsonResponse`): a tool call has one result
 * and the server sends nothing unasked, so GET, which would open a stream for
 * that, is answered 405 as the transport spec allows.
 */

export interface McpEndpointOptions {
  path: string;
  tools: readonly OperationTool[];
  callTool: CallTool;
  /** The front door's guard: authentication, then the rate limit. */
  guard(request: FastifyRequest): Promise<void>;
  /** The host names /mcp answers to. */
  allowedHosts: ReadonlySet<string>;
  sessions: { max: number; perOwner: number; idleMs: number };
  /** The gateway's version, which `initialize` names. */
  version: string;
  /** With JWTs: the OAuth protected resource a 401 points to. */
  resource?: ProtectedResource | undefined;
}

interface Session extends McpSession {
  transport: WebStandardStreamableHTTPServerTransport;
}

/** Who may use a session: the identity and account that initialized it (a refreshed token of the same subject may). */
const ownerOf = (credential: Credential) => `${credential.identity?.id ?? ''}\n${credential.identity?.account ?? ''}`;

/** JSON-RPC's error codes for the refusals the route words itself (the SDK's transport uses the same). */
const RPC = { parseError: -32700, serverError: -32000, sessionNotFound: -32001 };

function rpcError(reply: FastifyReply, status: number, code: number, message: string): FastifyReply {
  return reply.code(status).type('application/json').send({ jsonrpc: '2.0', error: { code, message }, id: null });
}

/** The request as the SDK's transport takes it: headers only, the body is handed parsed. */
function webRequestOf(request: FastifyRequest): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(request.headers)) {
    if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
  }
  return new Request(`http://localhost${request.url}`, { method: request.method, headers });
}

async function send(reply: FastifyReply, response: Response): Promise<FastifyReply> {
  reply.code(response.status);
  response.headers.forEach((value, name) => void reply.header(name, value));
  return reply.send(response.body === null ? undefined : await response.text());
}

export function mcpEndpoint(options: McpEndpointOptions): { routes: Route[]; sessions(): number; close(): Promise<void> } {
  const sessions = createMcpSessions<Session>(options.sessions);
  const sweep = setInterval(() => void sessions.sweep(), Math.min(options.sessions.idleMs, 60_000));
  sweep.unref();

  async function openSession(owner: string): Promise<Session> {
    const server = createSessionServer(options.tools, options.callTool, options.version);
    const transport: WebStandardStreamableHTTPServerTransport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableJsonResponse: true,
      onsessioninitialized: (id) => sessions.add(id, session),
      onsessionclosed: (id) => {
        sessions.remove(id);
        void server.close();
      },
    });
    const session: Session = { owner, lastUsed: 0, transport, close: () => server.close() };
    await server.connect(transport);
    return session;
  }

  /** The session a request names, or the refusal: unknown (404, so the client initializes again), or another identity's (403). */
  function sessionOf(request: FastifyRequest, reply: FastifyReply): Session | undefined {
    const id = request.headers['mcp-session-id'] as string;
    const session = sessions.use(id, ownerOf(request.scope.credential as Credential));
    if (!session) {
      rpcError(reply, 404, RPC.sessionNotFound, refusalMessage.mcpSessionNotFound());
      return undefined;
    }
    if (session === 'another-owner') {
      rpcError(reply, 403, RPC.serverError, refusalMessage.mcpSessionOfAnother());
      return undefined;
    }
    return session;
  }

  const handle = (transport: WebStandardStreamableHTTPServerTransport, request: FastifyRequest, parsedBody?: unknown) => {
    const credential = request.scope.credential as Credential;
    const caller: CallerInfo = { scope: request.scope };
    return transport.handleRequest(webRequestOf(request), {
      parsedBody,
      authInfo: {
        token: credential.authorization,
        clientId: credential.identity?.id ?? '',
        scopes: [...(credential.identity?.permissions ?? [])],
        extra: caller as unknown as Record<string, unknown>,
      },
    });
  };

  const refuseForeign = refuseForeignHosts(options.allowedHosts);
  const guard = async (request: FastifyRequest): Promise<void> => {
    refuseForeign(request);
    try {
      await options.guard(request);
    } catch (error) {
      // RFC 9728 §5.1: a 401 names where the client learns how to get a token (MCP's authorization spec).
      if (!options.resource || !isGatewayError(error) || error.code !== ErrorCode.UNAUTHENTICATED) throw error;
      throw refuse.unauthenticatedWithChallenge(error, challengeOf(options.resource, request));
    }
  };

  const common = { url: options.path, envelope: 'jsonrpc' as const, transport: 'mcp', guard };
  const routes: Route[] = [
    {
      ...common,
      method: 'POST',
      operation: 'message',
      async handler(request, reply) {
        let body: unknown;
        try {
          body = JSON.parse((request.body as Buffer | undefined)?.toString('utf8') ?? '');
        } catch {
          return rpcError(reply, 400, RPC.parseError, refusalMessage.mcpBodyNotJson());
        }
        if (request.headers['mcp-session-id'] === undefined) {
          if (!isInitializeRequest(body)) {
            return rpcError(reply, 400, RPC.serverError, refusalMessage.mcpInitializeFirst());
          }
          const session = await openSession(ownerOf(request.scope.credential as Credential));
          const response = await handle(session.transport, request, body);
          // An initialize the transport refused opened no session: nothing of it is kept.
          if (session.transport.sessionId === undefined) await session.close();
          return send(reply, response);
        }
        const session = sessionOf(request, reply);
        if (!session) return reply;
        return send(reply, await handle(session.transport, request, body));
      },
    },
    {
      ...common,
      method: 'DELETE',
      operation: 'end-session',
      async handler(request, reply) {
        if (request.headers['mcp-session-id'] === undefined)
          return rpcError(reply, 400, RPC.serverError, refusalMessage.mcpNoSessionHeader());
        const session = sessionOf(request, reply);
        if (!session) return reply;
        return send(reply, await handle(session.transport, request));
      },
    },
  ];
  return {
    routes,
    sessions: () => sessions.size,
    async close() {
      clearInterval(sweep);
      await sessions.closeAll();
    },
  };
}
