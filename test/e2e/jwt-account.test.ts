import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createJwtVerifier } from '../../src/auth/jwt-verifier.js';
import { loadConfig } from '../../src/config/config.js';
import type { GatewayError } from '../../src/errors.js';

/*
 * A token's account: with JWT_ACCOUNT_CLAIM, the claim's string value; a
 * token whose claim is missing or names no valid account is refused (so a
 * provider that stopped sending it never lands users in the default
 * account). Without it, every token is of the default account. Tokens are
 * signed here and verified against a JWKS this test serves.
 */

const ISSUER = 'https://issuer.test/';
const AUDIENCE = 'vending-gateway';

let privateKey: CryptoKey;
let server: Server;
let jwksUrl: string;

beforeAll(async () => {
  const pair = await generateKeyPair('ES256', { extractable: true });
  privateKey = pair.privateKey;
  const keys = [{ ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' }];
  server = createServer((_request, response) =>
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys })),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  jwksUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const token = (claims: Record<string, unknown>) =>
  new SignJWT({ permissions: ['read'], ...claims })
    .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
    .setIssuer(ISSUER)
    .setAudience(AUDIENCE)
    .setSubject('dash-7')
    .setExpirationTime('5m')
    .sign(privateKey);

const verifier = (env: Record<string, string> = {}) =>
  createJwtVerifier(loadConfig({ JWT_JWKS_URL: jwksUrl, JWT_ISSUER: ISSUER, JWT_AUDIENCE: AUDIENCE, ...env }).jwt!);

describe('with JWT_ACCOUNT_CLAIM', () => {
  it('a token belongs to the account its claim names', async () => {
    const identity = await verifier({ JWT_ACCOUNT_CLAIM: 'tenant' }).verify(await token({ tenant: 'acct-a' }));
    expect(identity).toMatchObject({ id: 'sub:dash-7', account: 'acct-a', permissions: new Set(['read']) });
  });

  it('a token whose claim is missing or names no valid account is refused, with a message naming the claim', async () => {
    const verify = verifier({ JWT_ACCOUNT_CLAIM: 'tenant' });
    for (const tenant of [undefined, '', 'a/b', 'x'.repeat(65), 42, ['acct-a'], { name: 'acct-a' }]) {
      const error = await verify.verify(await token(tenant === undefined ? {} : { tenant })).then(
        () => undefined,
        (caught: GatewayError) => caught,
      );
      expect(error, JSON.stringify(tenant)).toMatchObject({
        code: 'UNAUTHENTICATED',
        message: 'The token was refused: its "tenant" claim must name the account it belongs to',
      });
      expect(error!.extensions.http).toMatchObject({ status: 401 });
    }
  });
});

describe('without JWT_ACCOUNT_CLAIM', () => {
  it('every token is of the default account, whatever claims it carries', async () => {
    const identity = await verifier().verify(await token({ tenant: 'acct-a', account: 'acct-b' }));
    expect(identity.account).toBeUndefined();
    expect(loadConfig({ JWT_JWKS_URL: jwksUrl, JWT_ISSUER: ISSUER, JWT_AUDIENCE: AUDIENCE }).jwt!.accountClaim).toBeUndefined();
  });
});
