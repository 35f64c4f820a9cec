import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createAuthenticator } from '../../src/auth/authenticator.js';
import { createKeyStore, type KeyStore } from '../../src/auth/key-store.js';
import type { GatewayError } from '../../src/errors.js';
import { createLogger } from '../../src/logging/logger.js';

/*
 * A key's account (`key:permissions@account`, in API_KEYS and API_KEYS_FILE)
 * is part of its identity; a subscription shows one account's events, so a
 * key moved to another account by a reload ends its open subscriptions.
 */

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0).reverse()) cleanup();
});

function keyFile(text: string): { file: string; store: KeyStore } {
  const dir = mkdtempSync(join(tmpdir(), 'key-accounts-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'keys');
  writeFileSync(file, text);
  // A long debounce: the test reloads by hand, as SIGHUP does.
  const store = createKeyStore({
    entries: [{ key: 'env-key', permissions: ['read'], account: 'acct-env' }],
    file,
    logger: createLogger('silent'),
    debounceMs: 60_000,
  });
  cleanups.push(() => store.close());
  return { file, store };
}

describe("a key's account", () => {
  it('is in the identity made for the key, from API_KEYS and from the file; a key naming none has none', () => {
    const { store } = keyFile('dash:read+subscribe@acct-a\nplain:read\n');
    expect(store.lookup('env-key')).toMatchObject({ account: 'acct-env', permissions: new Set(['read']) });
    expect(store.lookup('dash')).toMatchObject({ account: 'acct-a', permissions: new Set(['read', 'subscribe']) });
    expect(store.lookup('plain')!.account).toBeUndefined();
    expect(store.lookup('dash')!.id).toMatch(/^key-[0-9a-f]{12}$/);
  });

  it("moved by a reload ends the key's open subscriptions; a reload that keeps it does not", async () => {
    const { file, store } = keyFile('dash:read+subscribe@acct-a\n');
    const authenticator = createAuthenticator({ keys: store, keysChange: true });
    const credential = await authenticator.authenticate('dash');
    expect(credential.identity.account).toBe('acct-a');
    const refusals: GatewayError[] = [];
    authenticator.watch!(credential, (error) => refusals.push(error));

    writeFileSync(file, 'dash:read+subscribe@acct-a\nother:read\n');
    store.reload();
    expect(refusals).toEqual([]);

    writeFileSync(file, 'dash:read+subscribe@acct-b\n');
    store.reload();
    expect(refusals.map((error) => [error.code, error.message])).toEqual([
      ['FORBIDDEN', 'This API key now belongs to another account: subscribe again to receive its events'],
    ]);
    expect((await authenticator.authenticate('dash')).identity.account).toBe('acct-b');
  });
});
