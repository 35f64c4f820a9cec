import type { FastifyRequest } from 'fastify';
import type { Route } from '../http/front-door.js';

/*
 * With JWTs the MCP endpoint is an OAuth 2.1 resource server, as MCP's
 * authorization spec asks: it publishes its Protected Resource Metadata
 * (RFC 9728) naming the identity provider that issues its tokens
 * (JWT_ISSUER), and every 401 points to it (`WWW-Authenticate: Bearer
 * resource_metadata="…"`), so an MCP client can find where to log in. The
 * tokens themselves are verified as on every route (src/auth/jwt-verifier.ts).
 */

export interface ProtectedResource {
  /** Where /mcp is served (`/mcp`). */
  path: string;
  /** The authorization servers whose tokens are accepted: JWT_ISSUER. */
  authorizationServers: string[];
  /** The permissions as OAuth scopes, when tokens carry them in `scope`; else none is advertised. */
  scopes?: string[] | undefined;
}

export const METADATA_PATH = '/.well-known/oauth-protected-resource';

/** The origin the client reached: behind a proxy that terminates TLS, its `X-Forwarded-Proto` says the scheme. */
function originOf(request: FastifyRequest): string {
  const forwarded = String(request.headers['x-forwarded-proto'] ?? '')
    .split(',')[0]
    ?.trim();
  const scheme = forwarded === 'https' || forwarded === 'http' ? forwarded : request.protocol;
  return `${scheme}://${request.headers.host ?? 'localhost'}`;
}

/** RFC 9728 §3.1: the metadata of a resource at a path is at the well-known path followed by that path. */
export const metadataUrlOf = (resource: ProtectedResource, request: FastifyRequest) =>
  `${originOf(request)}${METADATA_PATH}${resource.path}`;

export const challengeOf = (resource: ProtectedResource, request: FastifyRequest) =>
  `Bearer resource_metadata="${metadataUrlOf(resource, request)}"`;

/** The metadata's routes: at the path RFC 9728 derives from /mcp, and at the bare well-known path that older clients ask first. */
export function protectedResourceRoutes(resource: ProtectedResource, guard: (request: FastifyRequest) => void): Route[] {
  const handler = (request: FastifyRequest) => ({
    resource: `${originOf(request)}${resource.path}`,
    authorization_servers: resource.authorizationServers,
    bearer_methods_supported: ['header'],
    resource_name: 'vending-gateway',
    ...(resource.scopes ? { scopes_supported: resource.scopes } : {}),
  });
  return [METADATA_PATH, `${METADATA_PATH}${resource.path}`].map((url) => ({
    method: 'GET',
    url,
    transport: 'mcp',
    operation: 'resource-metadata',
    guard,
    handler,
  }));
}
