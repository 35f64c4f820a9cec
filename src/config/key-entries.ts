import { accountProblem } from '../contract/accounts.js';

/*
 * One API key entry, as API_KEYS and the lines of API_KEYS_FILE write it:
 * `key` (every permission), `key:read+subscribe` (those listed), or
 * `key:read+subscribe@acct-a` (those, for the account `acct-a`; without it
 * the key is of the default account). The list is what follows the last
 * `:`, so a key may itself hold colons as long as it then names its
 * permissions; the account is read only after such a list, so a key holding
 * `@` that names no permissions is still the whole entry. Pure: the config
 * reader and the key file's reloads use it alike, and neither ever repeats
 * the key in a problem.
 */

export const PERMISSIONS = ['read', 'subscribe', 'pay'] as const;
/** read: queries and REST GETs; subscribe: live events; pay: the payment mutation and REST PUT. */
export type Permission = (typeof PERMISSIONS)[number];

export interface KeyEntry {
  key: string;
  permissions: readonly Permission[];
  /** The account the key belongs to; absent: the default account. */
  account?: string;
}

const isPermission = (word: string): word is Permission => (PERMISSIONS as readonly string[]).includes(word);

/** The entry, or a sentence saying what is wrong with it (without the key). */
export function parseKeyEntry(text: string): KeyEntry | string {
  const entry = text.trim();
  const colon = entry.lastIndexOf(':');
  if (colon === -1) return entry === '' ? 'an empty key' : { key: entry, permissions: PERMISSIONS };
  const key = entry.slice(0, colon).trim();
  const tail = entry.slice(colon + 1);
  // Permission words hold no `@`: the first one ends the list and starts the account.
  const at = tail.indexOf('@');
  const words = (at === -1 ? tail : tail.slice(0, at)).split('+').map((word) => word.trim());
  if (key === '') return 'an empty key before its permissions';
  const unknown = words.filter((word) => !isPermission(word));
  // A typo must not quietly become part of a key that then works with every permission.
  if (unknown.length > 0) return `permissions after the last ":" must be ${PERMISSIONS.join(', ')} joined by "+"`;
  const permissions = [...new Set(words as Permission[])];
  if (at === -1) return { key, permissions };
  const account = tail.slice(at + 1).trim();
  const problem = accountProblem(account);
  // A mistyped account must not quietly leave the key in the default account.
  if (problem !== undefined) return `the account after the permissions' "@" ${problem}`;
  return { key, permissions, account };
}

/** Entries of a key file: one per line, `#` starts a comment, blank lines skipped; problems name their line. */
export function parseKeyFile(text: string): { entries: KeyEntry[]; problems: string[] } {
  const entries: KeyEntry[] = [];
  const problems: string[] = [];
  text.split(/\r?\n/).forEach((raw, index) => {
    const line = raw.replace(/(^|\s)#.*$/, '').trim();
    if (line === '') return;
    const parsed = parseKeyEntry(line);
    if (typeof parsed === 'string') problems.push(`line ${index + 1}: ${parsed}`);
    else entries.push(parsed);
  });
  return { entries, problems };
}
