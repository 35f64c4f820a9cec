import { accountProblem } from '../contract/accounts.js';

/*
 * Webhook signing secrets as WEBHOOK_SECRET writes them: `whsec_…` entries
 * (checking `/webhooks`, and every account's path without secrets of its own)
 * and `account=whsec_…` entries (that account's path only). Pure: the config
 * reader uses it, and no problem it words ever repeats any part of an entry,
 * since a secret pasted in the wrong place would otherwise reach the start-up
 * log.
 */

/**
 * A Standard Webhooks secret: `whsec_` followed by base64, padded as base64 is (the library refuses any other
 * length or a character past the padding, and would end the start with a stack trace).
 */
export const WEBHOOK_SECRET_PATTERN = /^whsec_(?=[A-Za-z0-9+/])(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** The entry `whsec_…` (no account) or `account=whsec_…`, or what is wrong with it, in words that quote none of it. */
export function parseSecretEntry(entry: string): { account: string | undefined; secret: string } | string {
  // A secret starts with whsec_; account names hold no "=", base64 may end with some: the first one separates the two.
  const at = entry.startsWith('whsec_') ? -1 : entry.indexOf('=');
  if (at < 0)
    return WEBHOOK_SECRET_PATTERN.test(entry.trim())
      ? { account: undefined, secret: entry.trim() }
      : 'a secret must be whsec_ followed by base64, alone or after an account name and "="';
  const account = entry.slice(0, at).trim();
  const secret = entry.slice(at + 1).trim();
  const problem = accountProblem(account);
  if (problem !== undefined) return `the account name ${problem}`;
  if (!WEBHOOK_SECRET_PATTERN.test(secret)) return 'the secret must be whsec_ followed by base64';
  return { account, secret };
}

/**
 * The secrets of `/webhooks` (and of accounts without their own), and each account's own, in the order given
 * (several while one is rotated out); the entries were checked when read.
 */
export function webhookSecrets(entries: readonly string[]): { plain: string[]; byAccount: ReadonlyMap<string, readonly string[]> } {
  const plain: string[] = [];
  const byAccount = new Map<string, string[]>();
  for (const entry of entries) {
    const parsed = parseSecretEntry(entry);
    if (typeof parsed === 'string') throw new Error('WEBHOOK_SECRET was read without its entries checked');
    if (parsed.account === undefined) plain.push(parsed.secret);
    else byAccount.set(parsed.account, [...(byAccount.get(parsed.account) ?? []), parsed.secret]);
  }
  return { plain, byAccount };
}
