import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';

/*
 * With JWTs /mcp is an OAuth 2.1 resource server: its 401 names the
 * Protected Resource Metadata (RFC 9728), which names the issuer, and a
 * token of that issuer opens a session whose tools run with its permissions.
 */

const ISSUER = 'https://issuer.test/';
const AUDIENCE = 'vending-gateway';

let privateKey: CryptoKey;
let jwks: Server;
let running: RunningGateway;

beforeAll(async () => {
  const pair = await generateKeyPair('ES256', { extractable: true });
  privateKey = pair.privateKey;
  const jwk = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
  jwks = createServer((_request, response) =>
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [jwk] })),
  );
  await new Promise<void>((resolve) => jwks.listen(0, '127.0.0.1', resolve));
  const jwksUrl = `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/jwks.json`;
  running = await startGateway({
    MCP: 'read',
    JWT_JWKS_URL: jwksUrl,
    JWT_ISSUER: ISSUER,
    JWT_AUDIENCE: AUDIENCE,
    JWT_PERMISSIONS_CLAIM: 'scope',
  });
});
afterAll(async () => {
  await running?.close();
  await new Promise((resolve) => jwks.close(resolve));
});

const token = (scope: string) =>
  new SignJWT({ scope })
    .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
    .setIssuer(ISSUER)
    .setAudience(AUDIENCE)
    .setSubject('assistant-1')
    .setIssuedAt()
    .setExpirationTime('5m')
    .sign(privateKey);

describe('/mcp with JWT_JWKS_URL', () => {
  it('answers 401 with WWW-Authenticate naming the protected resource metadata, which names the issuer', async () => {
    const answer = await fetch(`${running.url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
    });
    expect(answer.status).toBe(401);
    const metadataUrl = `${running.url}/.well-known/oauth-protected-resource/mcp`;
    expect(answer.headers.get('www-authenticate')).toBe(`Bearer resource_metadata="${metadataUrl}"`);
    for (const url of [metadataUrl, `${running.url}/.well-known/oauth-protected-resource`]) {
      const metadata = await fetch(url);
      expect(metadata.status).toBe(200);
      expect(await metadata.json()).toEqual({
        resource: `${running.url}/mcp`,
        authorization_servers: [ISSUER],
        bearer_methods_supported: ['header'],
        resource_name: 'vending-gateway',
        scopes_supported: ['read', 'subscribe', 'pay'],
      });
    }
  });

  it('serves a token with the read scope, and refuses a token without it through the permission rules', async () => {
    const connect = async (jwt: string) => {
      const client = new Client({ name: 'oauth-e2e', version: '1' });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${running.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${jwt}` } } }),
      );
      return client;
    };
    const reader = await connect(await token('read'));
    const read = (await reader.callTool({ name: 'fleet_overview', arguments: { first: 1 } })) as CallToolResult;
    expect(read.isError).toBeFalsy();
    expect((read.structuredContent as any).data.vendings.nodes).toHaveLength(1);
    const subscriber = await connect(await token('subscribe'));
    const refused = (await subscriber.callTool({ name: 'fleet_overview', arguments: {} })) as CallToolResult;
    expect(refused.isError).toBe(true);
    expect(refused.content).toEqual([expect.objectContaining({ text: expect.stringContaining('FORBIDDEN: ') })]);
    await Promise.all([reader.close(), subscriber.close()]);
  });
});
