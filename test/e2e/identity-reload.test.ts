import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { exportJWK, generateKeyPair, SignJWT, type JWK } from 'jose';
import { afterAll, describe, expect, it } from 'vitest';
import { codesOf, postGraphQL } from '../helpers/graphql-client.js';
import { waitFor } from '../helpers/wait-for.js';

/*
 * SIGHUP re-reads identities without a restart: the
 * gateway started as `npm start` does (node dist/main.js) reads
 * API_KEYS_FILE again and forgets the JWKS it fetched, so a signing key the
 * issuer replaced under the same `kid` (which jose's key set would not fetch
 * again by itself) verifies at once.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const ISSUER = 'https://issuer.test/';
const AUDIENCE = 'vending-gateway';
const QUERY = '{ vendings(first: 1) { totalCount } }';

const cleanups: Array<() => unknown> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

async function keyPair(): Promise<{ jwk: JWK; sign(): Promise<string> }> {
  const { privateKey, publicKey } = await generateKeyPair('ES256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'only', alg: 'ES256' };
  const sign = () =>
    new SignJWT({ permissions: ['read'] })
      .setProtectedHeader({ alg: 'ES256', kid: 'only' })
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setSubject('ops')
      .setExpirationTime('5m')
      .sign(privateKey);
  return { jwk, sign };
}

describe('SIGHUP', () => {
  it('re-reads API_KEYS_FILE and fetches the JWKS again, with no restart', async () => {
    const first = await keyPair();
    const second = await keyPair();
    let served: JWK[] = [first.jwk];
    const jwks: Server = createServer((_request, response) =>
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: served })),
    );
    await new Promise<void>((resolve) => jwks.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise((resolve) => jwks.close(resolve)));
    const dir = mkdtempSync(join(tmpdir(), 'sighup-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'keys');
    writeFileSync(file, 'ops-key:read\n');

    const child: ChildProcess = spawn(process.execPath, ['dist/main.js'], {
      cwd: ROOT,
      env: {
        ...process.env,
        PORT: '0',
        HOST: '127.0.0.1',
        LOG_LEVEL: 'info',
        API_KEYS: '',
        API_KEYS_FILE: file,
        JWT_JWKS_URL: `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/jwks`,
        JWT_ISSUER: ISSUER,
        JWT_AUDIENCE: AUDIENCE,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    cleanups.push(() => {
      if (child.exitCode === null) child.kill('SIGKILL');
    });
    let stdout = '';
    child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    expect(await waitFor(() => /"url":"http[^"]+"/.test(stdout), 15_000, 50), stdout).toBe(true);
    const url = /"url":"(http[^"]+)"/.exec(stdout)![1]!;

    expect(codesOf(await postGraphQL(url, QUERY, { key: 'ops-key' }))).toEqual([]);
    expect(codesOf(await postGraphQL(url, QUERY, { key: `Bearer ${await first.sign()}` }))).toEqual([]);
    // The issuer replaces its key under the same kid: the key set the gateway holds does not know it.
    served = [second.jwk];
    expect((await postGraphQL(url, QUERY, { key: `Bearer ${await second.sign()}` })).status).toBe(401);

    child.kill('SIGHUP');
    expect(await waitFor(() => stdout.includes('"msg":"API keys re-read"'), 5_000, 20), stdout).toBe(true);
    expect(codesOf(await postGraphQL(url, QUERY, { key: `Bearer ${await second.sign()}` }))).toEqual([]);
    expect(codesOf(await postGraphQL(url, QUERY, { key: 'ops-key' }))).toEqual([]);
    // Still the same process, and its log never shows a key.
    expect(child.exitCode).toBeNull();
    expect(stdout).not.toContain('ops-key');
  }, 30_000);
});
