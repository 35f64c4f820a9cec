import { createHmac } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, exportSPKI, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDemoData } from '../../src/backends/memory/demo-data.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { codesOf, postGraphQL } from '../helpers/graphql-client.js';
import { waitFor } from '../helpers/wait-for.js';
import { subscribe, wsClient } from '../helpers/ws-client.js';

/*
 * JWTs verified against a JWKS the test serves: a token's
 * permissions come from its `permissions` claim (or the configured one, a
 * space-separated `scope` too); expired tokens, other issuers or audiences,
 * `alg: none` and HS256 "signed" with the public key are refused (401).
 */

const ISSUER = 'https://issuer.test/';
const AUDIENCE = 'vending-gateway';
const [transaction] = createDemoData().transactions;
const id = transaction!.transactionId;
const QUERY = 'query One($id: ID!) { transaction(id: $id) { transactionId } }';
const MUTATION =
  'mutation Pay($id: ID!) { updateTransactionPayment(transactionId: $id, payment: {status: "paid"}) { transaction { transactionId } } }';

const b64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

interface Jwks {
  url: string;
  /** Requests the JWKS answered. */
  fetches: number;
  keys: JWK[];
  close(): Promise<void>;
}

async function serveJwks(keys: JWK[]): Promise<Jwks> {
  const jwks: Jwks = { url: '', fetches: 0, keys, close: async () => {} };
  const server: Server = createServer((_request, response) => {
    jwks.fetches += 1;
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: jwks.keys }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  jwks.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/.well-known/jwks.json`;
  jwks.close = () => new Promise((resolve) => server.close(() => resolve()));
  return jwks;
}

let privateKey: CryptoKey;
let publicJwk: JWK;
let publicPem: string;
let jwks: Jwks;
let running: RunningGateway;
const extra: RunningGateway[] = [];

/** A token signed by the JWKS's key, with the right issuer and audience unless `claims` or `edit` say otherwise. */
function token(claims: Record<string, unknown>, edit: (jwt: SignJWT) => SignJWT = (jwt) => jwt): Promise<string> {
  const jwt = new SignJWT(claims)
    .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
    .setIssuer(ISSUER)
    .setAudience(AUDIENCE)
    .setSubject('dashboard-7')
    .setIssuedAt()
    .setExpirationTime('5m');
  return edit(jwt).sign(privateKey);
}

beforeAll(async () => {
  const pair = await generateKeyPair('ES256', { extractable: true });
  privateKey = pair.privateKey;
  publicJwk = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
  publicPem = await exportSPKI(pair.publicKey);
  jwks = await serveJwks([publicJwk]);
  running = await startGateway(
    { API_KEYS: 'static-key:read', JWT_JWKS_URL: jwks.url, JWT_ISSUER: ISSUER, JWT_AUDIENCE: AUDIENCE },
    {},
    (config) => ({ ...config, jwt: config.jwt && { ...config.jwt, clockSkewS: 0 } }),
  );
});
afterAll(async () => {
  await Promise.all([running, ...extra].map((gateway) => gateway.close()));
  await jwks.close();
});

const bearer = (jwt: string) => `Bearer ${jwt}`;

describe('a token signed by a key of JWT_JWKS_URL', () => {
  it('has the permissions of its claim: read+subscribe queries and subscribes, and is refused the payment', async () => {
    const jwt = await token({ permissions: ['read', 'subscribe'] });
    expect(codesOf(await postGraphQL(running.url, QUERY, { key: bearer(jwt), variables: { id } }))).toEqual([]);
    const payment = await postGraphQL(running.url, MUTATION, { key: bearer(jwt), variables: { id } });
    expect(codesOf(payment)).toEqual(['FORBIDDEN']);
    const put = await fetch(`${running.url}/transactions/${id}/payment`, {
      method: 'PUT',
      headers: { authorization: bearer(jwt) },
      body: '{}',
    });
    expect(put.status).toBe(403);

    const client = wsClient(running.url, bearer(jwt));
    subscribe(client, 'subscription { transactionUpdated { status } }');
    expect(await waitFor(() => running.gateway.activeSubscriptions() === 1)).toBe(true);
    await client.dispose();
    // Keys go on working beside tokens.
    expect(codesOf(await postGraphQL(running.url, QUERY, { key: 'static-key', variables: { id } }))).toEqual([]);
  });

  it('ends its open subscription when it expires', async () => {
    const jwt = await token({ permissions: ['subscribe'] }, (edit) => edit.setExpirationTime(Math.floor(Date.now() / 1000) + 2));
    const client = wsClient(running.url, bearer(jwt));
    const ws = subscribe(client, 'subscription { transactionUpdated { status } }');
    const ended = await ws.next(10_000);
    expect(ended.errors?.map((error) => (error as { message?: string }).message)).toEqual(['The token has expired']);
    expect(await ws.ended).toBe('complete');
    await client.dispose();
  });

  it('without a permissions claim is who it says, and may do nothing (FORBIDDEN)', async () => {
    const jwt = await token({});
    const query = await postGraphQL(running.url, QUERY, { key: bearer(jwt), variables: { id } });
    expect(query.status).toBe(200);
    expect(codesOf(query)).toEqual(['FORBIDDEN']);
  });

  it('keeps the key set it fetched: many tokens, one fetch', async () => {
    const before = jwks.fetches;
    for (let i = 0; i < 5; i += 1)
      expect(
        (await postGraphQL(running.url, QUERY, { key: bearer(await token({ permissions: ['read'] })), variables: { id } })).status,
      ).toBe(200);
    expect(jwks.fetches - before).toBeLessThanOrEqual(1);
  });

  it('with a space-separated scope claim, when JWT_PERMISSIONS_CLAIM=scope', async () => {
    const scoped = await startGateway({
      JWT_JWKS_URL: jwks.url,
      JWT_ISSUER: ISSUER,
      JWT_AUDIENCE: AUDIENCE,
      JWT_PERMISSIONS_CLAIM: 'scope',
    });
    extra.push(scoped);
    const jwt = await token({ scope: 'openid read pay' });
    expect(codesOf(await postGraphQL(scoped.url, MUTATION, { key: bearer(jwt), variables: { id } }))).toEqual([]);
    expect(codesOf(await postGraphQL(scoped.url, QUERY, { key: bearer(jwt), variables: { id } }))).toEqual([]);
    expect(codesOf(await postGraphQL(scoped.url, 'subscription { transactionUpdated { status } }', { key: bearer(jwt) }))).toEqual([
      'FORBIDDEN',
    ]);
  });
});

describe('rate limits', () => {
  it('count per identity: the many tokens of one subject share a limit, another subject has its own', async () => {
    const limited = await startGateway({ JWT_JWKS_URL: jwks.url, JWT_ISSUER: ISSUER, JWT_AUDIENCE: AUDIENCE, RATE_LIMIT_PER_SECOND: '5' });
    extra.push(limited);
    // A fresh token per request (as a client refreshing them would have): 15 tokens, one subject.
    const tokens = await Promise.all(Array.from({ length: 15 }, (_, i) => token({ permissions: ['read'], n: i })));
    const flood = await Promise.all(tokens.map((jwt) => fetch(`${limited.url}/vendings`, { headers: { authorization: bearer(jwt) } })));
    expect(flood.filter((response) => response.status === 429).length).toBeGreaterThanOrEqual(10);
    const other = await token({ permissions: ['read'] }, (jwt) => jwt.setSubject('another-dashboard'));
    expect((await fetch(`${limited.url}/vendings`, { headers: { authorization: bearer(other) } })).status).toBe(200);
  });
});

describe('refused with 401', () => {
  /** Each refused token, and the reason the client is told. */
  const cases: Record<string, [() => Promise<string>, RegExp]> = {
    'an expired token': [
      () =>
        token({ permissions: ['read'] }, (jwt) =>
          jwt.setIssuedAt(Math.floor(Date.now() / 1000) - 600).setExpirationTime(Math.floor(Date.now() / 1000) - 60),
        ),
      /expired/,
    ],
    // A token that never expires would stay a credential forever, whatever its holder.
    'a token without exp': [
      () =>
        new SignJWT({ permissions: ['read'] })
          .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
          .setIssuer(ISSUER)
          .setAudience(AUDIENCE)
          .setSubject('dashboard-7')
          .setIssuedAt()
          .sign(privateKey),
      /"exp"/,
    ],
    'a token without exp or iat': [
      () =>
        new SignJWT({ permissions: ['read'] })
          .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
          .setIssuer(ISSUER)
          .setAudience(AUDIENCE)
          .sign(privateKey),
      /"exp"/,
    ],
    'another issuer': [() => token({ permissions: ['read'] }, (jwt) => jwt.setIssuer('https://elsewhere.test/')), /"iss" claim/],
    'another audience': [() => token({ permissions: ['read'] }, (jwt) => jwt.setAudience('another-service')), /"aud" claim/],
    'alg none': [
      async () =>
        `${b64url({ alg: 'none', typ: 'JWT' })}.` +
        `${b64url({ iss: ISSUER, aud: AUDIENCE, sub: 'x', permissions: ['read', 'pay'], exp: Math.floor(Date.now() / 1000) + 300 })}.`,
      /algorithm/,
    ],
    'HS256 with the public key as its secret': [
      async () => {
        const claims = { iss: ISSUER, aud: AUDIENCE, sub: 'x', permissions: ['read', 'pay'], exp: Math.floor(Date.now() / 1000) + 300 };
        const signingInput = `${b64url({ alg: 'HS256', typ: 'JWT', kid: 'k1' })}.${b64url(claims)}`;
        return `${signingInput}.${createHmac('sha256', publicPem).update(signingInput).digest('base64url')}`;
      },
      /algorithm/,
    ],
    'a token signed by a key not in the set': [
      async () => {
        const other = await generateKeyPair('ES256');
        return new SignJWT({ permissions: ['read'] })
          .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
          .setIssuer(ISSUER)
          .setAudience(AUDIENCE)
          .setExpirationTime('5m')
          .sign(other.privateKey);
      },
      /signature/,
    ],
  };
  for (const [name, [make, reason]] of Object.entries(cases)) {
    it(name, async () => {
      const jwt = await make();
      const response = await postGraphQL(running.url, QUERY, { key: bearer(jwt), variables: { id } });
      expect(response.status).toBe(401);
      expect(codesOf(response)).toEqual(['UNAUTHENTICATED']);
      expect(response.body.errors![0]!.message).toMatch(reason);
      const rest = await fetch(`${running.url}/transactions/${id}`, { headers: { authorization: bearer(jwt) } });
      expect(rest.status).toBe(401);
      expect(JSON.stringify(await rest.json())).not.toContain(jwt);
    });
  }
});

describe('the key set cannot be had', () => {
  it('answers 502 UPSTREAM_UNAVAILABLE (retry), not 401: nothing is known of the token yet', async () => {
    const gone = await serveJwks([]);
    await gone.close();
    const blind = await startGateway({ JWT_JWKS_URL: gone.url, JWT_ISSUER: ISSUER, JWT_AUDIENCE: AUDIENCE });
    extra.push(blind);
    const response = await postGraphQL(blind.url, QUERY, { key: bearer(await token({ permissions: ['read'] })), variables: { id } });
    expect(codesOf(response)).toEqual(['UPSTREAM_UNAVAILABLE']);
    expect(response.status).toBe(502);
  });
});
