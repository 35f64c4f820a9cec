/*
 * Accounts of the service behind one gateway. The service makes keys per
 * account and lets each account send its webhooks to an address of its own;
 * the gateway takes an account's webhooks on `POST /webhooks/{account}` and
 * keeps what it holds of them (events, resume, history, statistics) apart
 * from every other account's. `POST /webhooks` is the path of the default
 * account: a one-account gateway's, and the account of every key or token
 * that names none.
 */

/** The account of `POST /webhooks`, and of identities that name none. Never a path's: a path's name is not empty. */
export const DEFAULT_ACCOUNT = '';

/** An account's name: a path segment, a log field and a key part, so short and plain. */
export const MAX_ACCOUNT_LENGTH = 64;
const ACCOUNT_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/** Why `name` cannot name an account, or undefined when it can. */
export function accountProblem(name: string): string | undefined {
  if (name.length === 0) return 'must not be empty';
  if (name.length > MAX_ACCOUNT_LENGTH) return `must be at most ${MAX_ACCOUNT_LENGTH} characters`;
  if (!ACCOUNT_NAME.test(name)) return 'must be letters, digits, ".", "_" and "-", starting with a letter or digit';
  return undefined;
}

/** The account of an event or an identity: the one it names, else the default account. */
export const accountOf = (owner: { account?: string | undefined } | undefined): string => owner?.account ?? DEFAULT_ACCOUNT;

/** How logs and messages name an account. */
export const accountName = (account: string): string =>
  account === DEFAULT_ACCOUNT ? 'the default account (POST /webhooks)' : `account "${account}"`;
