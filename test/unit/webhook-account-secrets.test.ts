import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, parseAccountSecret } from '../../src/config/index.js';

/* WEBHOOK_ACCOUNT_SECRETS: each account's own webhook secrets, and problems that stop the start without repeating any of an entry. */

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

describe.concurrent('WEBHOOK_ACCOUNT_SECRETS', () => {
  it('is empty by default', () => {
    expect(loadConfig({}).webhookAccountSecrets).toEqual(new Map());
  });

  it('gives each account its secrets in the order listed, several while one is rotated out, trimmed', () => {
    const config = loadConfig({ WEBHOOK_ACCOUNT_SECRETS: ` acct-a = ${A1},acct-b=${B}, ,acct-a=${A2}`, WEBHOOK_SECRET: DEFAULT });
    expect(config.webhookAccountSecrets).toEqual(new Map([['acct-a', [A1, A2]], ['acct-b', [B]]]));
    // The default account's (and every other account's) secret is WEBHOOK_SECRET's, as before.
    expect(config.webhookSecrets).toEqual([DEFAULT]);
  });

  it('takes any name an account may have, and base64 padding in the secret', () => {
    const padded = `whsec_${Buffer.alloc(23, 7).toString('base64')}`;
    expect(padded).toMatch(/=$/);
    const name = `A.b_c-9${'x'.repeat(57)}`;
    expect(name).toHaveLength(64);
    expect(loadConfig({ WEBHOOK_ACCOUNT_SECRETS: `${name}=${padded}` }).webhookAccountSecrets.get(name)).toEqual([padded]);
  });

  it('stops the start on an entry it cannot read, naming the entry by its place and what is wrong, never any of it', () => {
    const cases: Array<[entry: string, problem: string]> = [
      [A1, 'no "=" between the account and its secret'],
      [`=${A1}`, 'the account name must not be empty'],
      [`acct a=${A1}`, 'the account name must be letters, digits, ".", "_" and "-", starting with a letter or digit'],
      [`-acct=${A1}`, 'the account name must be letters, digits, ".", "_" and "-", starting with a letter or digit'],
      [`${'a'.repeat(65)}=${A1}`, 'the account name must be at most 64 characters'],
      ['acct-a=sekrit-not-whsec', 'the secret must be whsec_ followed by base64'],
      ['acct-a=whsec_', 'the secret must be whsec_ followed by base64'],
      ['acct-a=whsec_sekrit!', 'the secret must be whsec_ followed by base64'],
      // A secret pasted where the account goes, with its padding read as the separator: still quoted nowhere.
      [`${secret(5).slice(0, -1)}=`, 'the secret must be whsec_ followed by base64'],
    ];
    for (const [entry, problem] of cases) {
      const error = errorOf({ WEBHOOK_ACCOUNT_SECRETS: `acct-ok=${A1},${entry}` });
      expect(error, entry).toBeInstanceOf(ConfigError);
      expect(error.message, entry).toMatch(/^WEBHOOK_ACCOUNT_SECRETS must be comma-separated account=secret entries \(/);
      expect(error.message, entry).toMatch(new RegExp(`; entry 2 of 2: ${problem.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`));
      expect(error.message, entry).not.toContain('\n');
      for (const part of [A1, 'sekrit', secret(5).slice(6, 20), 'acct a', '-acct', 'aaaaaaaaaa']) expect(error.message, entry).not.toContain(part);
      expect(parseAccountSecret(entry), entry).toBe(problem);
    }
  });

  it('does not weaken what production requires of WEBHOOK_SECRET: every other path is still checked with it', () => {
    const production = { NODE_ENV: 'production', API_KEYS: 'k', WEBHOOK_ACCOUNT_SECRETS: `acct-a=${A1}` };
    expect(errorOf(production).message).toBe('WEBHOOK_SECRET must be set when NODE_ENV=production (or WEBHOOK_UNSIGNED=allow to accept unsigned webhooks)');
    expect(errorOf({ ...production, WEBHOOK_UNSIGNED: 'refuse' }).message).toBe('WEBHOOK_SECRET must be set when WEBHOOK_UNSIGNED=refuse');
    expect(loadConfig({ ...production, WEBHOOK_SECRET: DEFAULT }).webhookAccountSecrets.get('acct-a')).toEqual([A1]);
    expect(loadConfig({ ...production, WEBHOOK_UNSIGNED: 'allow' }).webhookSecrets).toEqual([]);
  });
});
