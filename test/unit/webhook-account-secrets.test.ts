import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, parseSecretEntry } from '../../src/config/config.js';

/*
 * WEBHOOK_SECRET's account=whsec_… entries: each account's own webhook secrets, and problems that stop the start
 * without repeating any of an entry.
 */

const secret = (fill: number) => `whsec_${Buffer.alloc(24, fill).toString('base64')}`;
const [A1, A2, B, DEFAULT] = [secret(1), secret(2), secret(3), secret(4)];

/** What loadConfig throws for `env`. */
function errorOf(env: Record<string, string>): Error {
  try {
    loadConfig(env);
  } catch (error) {
    return error as Error;
  }
  throw new Error(`loadConfig accepted ${Object.keys(env).join(', ')}`);
}

describe.concurrent("WEBHOOK_SECRET's entries of accounts", () => {
  it('is empty by default', () => {
    expect(loadConfig({}).webhookAccountSecrets).toEqual(new Map());
  });

  it('gives each account its secrets in the order listed, several while one is rotated out, trimmed', () => {
    const config = loadConfig({ WEBHOOK_SECRET: ` acct-a = ${A1},acct-b=${B}, ,${DEFAULT},acct-a=${A2}` });
    expect(config.webhookAccountSecrets).toEqual(
      new Map([
        ['acct-a', [A1, A2]],
        ['acct-b', [B]],
      ]),
    );
    // The default account's (and every other account's) secrets are the ones alone, as before.
    expect(config.webhookSecrets).toEqual([DEFAULT]);
  });

  it('takes any name an account may have, and base64 padding in the secret', () => {
    const padded = `whsec_${Buffer.alloc(23, 7).toString('base64')}`;
    expect(padded).toMatch(/=$/);
    const name = `A.b_c-9${'x'.repeat(57)}`;
    expect(name).toHaveLength(64);
    expect(loadConfig({ WEBHOOK_SECRET: `${name}=${padded}` }).webhookAccountSecrets.get(name)).toEqual([padded]);
  });

  it('stops the start on an entry it cannot read, naming the entry by its place and what is wrong, never any of it', () => {
    const cases: Array<[entry: string, problem: string]> = [
      ['sekrit-not-whsec', 'a secret must be whsec_ followed by base64, alone or after an account name and "="'],
      [`=${A1}`, 'the account name must not be empty'],
      [`acct a=${A1}`, 'the account name must be letters, digits, ".", "_" and "-", starting with a letter or digit'],
      [`-acct=${A1}`, 'the account name must be letters, digits, ".", "_" and "-", starting with a letter or digit'],
      [`${'a'.repeat(65)}=${A1}`, 'the account name must be at most 64 characters'],
      ['acct-a=sekrit-not-whsec', 'the secret must be whsec_ followed by base64'],
      ['acct-a=whsec_', 'the secret must be whsec_ followed by base64'],
      ['acct-a=whsec_sekrit!', 'the secret must be whsec_ followed by base64'],
      // Base64 that the signature library refuses: a character past the padding, a length base64 never has.
      [`acct-a=${secret(6)}x`, 'the secret must be whsec_ followed by base64'],
      ['acct-a=whsec_abc', 'the secret must be whsec_ followed by base64'],
      // A secret cut short, with its padding read as the separator: still quoted nowhere.
      [`${secret(5).slice(6, -1)}=`, 'the secret must be whsec_ followed by base64'],
    ];
    for (const [entry, problem] of cases) {
      const error = errorOf({ WEBHOOK_SECRET: `acct-ok=${A1},${entry}` });
      expect(error, entry).toBeInstanceOf(ConfigError);
      expect(error.message, entry).toMatch(/^WEBHOOK_SECRET must be comma-separated Standard Webhooks secrets \(/);
      expect(error.message, entry).toMatch(new RegExp(`; entry 2 of 2: ${problem.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`));
      expect(error.message, entry).not.toContain('\n');
      for (const part of [A1, 'sekrit', secret(5).slice(6, 20), 'acct a', '-acct', 'aaaaaaaaaa'])
        expect(error.message, entry).not.toContain(part);
      expect(parseSecretEntry(entry), entry).toBe(problem);
    }
  });

  it('does not weaken what production requires: every other path is still checked with a secret alone', () => {
    const production = { NODE_ENV: 'production', API_KEYS: 'k', WEBHOOK_SECRET: `acct-a=${A1}` };
    expect(errorOf(production).message).toBe(
      'WEBHOOK_SECRET must be set when NODE_ENV=production (or WEBHOOK_UNSIGNED=allow to accept unsigned webhooks)',
    );
    expect(errorOf({ ...production, WEBHOOK_UNSIGNED: 'refuse' }).message).toBe('WEBHOOK_SECRET must be set when WEBHOOK_UNSIGNED=refuse');
    expect(loadConfig({ ...production, WEBHOOK_SECRET: `acct-a=${A1},${DEFAULT}` }).webhookAccountSecrets.get('acct-a')).toEqual([A1]);
    expect(loadConfig({ ...production, WEBHOOK_UNSIGNED: 'allow' }).webhookSecrets).toEqual([]);
  });
});
