import { accountProblem } from '../contract/accounts.js';

/*
 * Webhook signing secrets as the configuration writes them: WEBHOOK_SECRET's
 * (the default account's, and every account's without secrets of its own) and
 * WEBHOOK_ACCOUNT_SECRETS' `account=whsec_…` entries. Pure: the config reader
 * uses it, and no problem it words ever repeats any part of an entry, since a
 * secret pasted in the wrong place would otherwise reach the start-up log.
 */

/** A Standard Webhooks secret: `whsec_` followed by base64. */
export const WEBHOOK_SECRET_PATTERN = /^whsec_[A-Za-z0-9+/=]+$/;

export interface AccountSecret {
  account: string;
  secret: string;
}

/** The entry `account=whsec_…`, or what is wrong with it, in words that quote none of it. */
export function parseAccountSecret(entry: string): AccountSecret | string {
  // Account names hold no "=", base64 may end with some: the first one separates the two.
  const at = entry.indexOf('=');
  if (at < 0) return 'no "=" between the account and its secret';
  const account = entry.slice(0, at).trim();
  const secret = entry.slice(at + 1).trim();
  const problem = accountProblem(account);
  if (problem !== undefined) return `the account name ${problem}`;
  if (!WEBHOOK_SECRET_PATTERN.test(secret)) return 'the secret must be whsec_ followed by base64';
  return { account, secret };
}

/** Each account's secrets, in the order given (several while one is rotated out); the entries were checked when read. */
export function accountSecrets(entries: readonly string[]): ReadonlyMap<string, readonly string[]> {
  const secrets = new Map<string, string[]>();
  for (const entry of entries) {
    const parsed = parseAccountSecret(entry);
    if (typeof parsed === 'string') throw new Error('WEBHOOK_ACCOUNT_SECRETS was read without its entries checked');
    secrets.set(parsed.account, [...(secrets.get(parsed.account) ?? []), parsed.secret]);
  }
  return secrets;
}
