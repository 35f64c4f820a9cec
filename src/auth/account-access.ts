import { SYSTEM_IDENTITY, type Backend, type Credential } from '../backends/backend.js';
import { boundedCache } from '../backends/bounded-cache.js';
import type { Config } from '../config/config.js';
import type { Logger } from '../logging/logger.js';
import { accountOf, DEFAULT_ACCOUNT } from '../contract/accounts.js';
import { ErrorCode, isGatewayError } from '../errors.js';
import { createCheckLimit, createVerdicts, keyDigest, type CheckLimit } from './upstream-verdicts.js';

/*
 * The one place that says which account's transactions a credential may
 * receive from what the gateway holds (live events, history, statistics):
 * everything that arrived on an account's webhook path belongs to that
 * account, and is shown only to the identities of that account.
 *
 * With the gateway's own keys and tokens an identity names its account
 * (an API_KEYS entry's `@account`, the JWT_ACCOUNT_CLAIM), absent meaning the
 * default one. In forward mode a key names none: only the service knows
 * which account made it, and the contract has no call that says. What it
 * does have is `GET /transactions/{id}` made with the key: the service lets
 * a key read its own account's transactions only, so a key that may read
 * one transaction that came in on account A's path is a key of account A.
 * One such verdict per key and account, remembered for 30 s (fixed.ts forwardKeyTtlMs),
 * answers for every transaction of that account. The default account's path
 * may carry the webhooks of several accounts (a service that sends all to
 * one address), so there each transaction is judged on its own. Verdicts
 * share the key check's mechanism (upstream-verdicts.ts): digests of keys,
 * a bound, one call for concurrent asks, the per-second limit; an ask that
 * gets no verdict (timeout, 5xx, the limit) denies for now and is asked
 * again next time.
 *
 * A service may also send several accounts' webhooks to one account's path
 * (misconfigured). Each renewal of a key's verdict on an account asks about
 * that account's latest transaction, not the first: a key the service lets
 * read one transaction of the path and not another (404, not a refused key)
 * shows the path carries several accounts. From then on that path is judged
 * transaction by transaction, as the default one is, and its lists and sums
 * are nobody's (logged once, naming the path).
 */

export interface ForwardAccountOptions {
  /** `GET /transactions/{transactionId}` made with `authorization`: resolves on 2xx; rejects with the upstream's GatewayError. */
  probe(authorization: string, transactionId: string): Promise<unknown>;
  /** How long a verdict is remembered (30 s: fixed.ts forwardKeyTtlMs). */
  ttlMs: number;
  /** Most verdicts asked in any one second, unless `limit` is given. */
  checksPerSecond: number;
  /** The instance's check limit, shared with the key check; by default one of its own of `checksPerSecond`. */
  limit?: CheckLimit | undefined;
  /** Most verdicts remembered; past it the least recently used is forgotten. @default 10000 */
  maxEntries?: number | undefined;
  /** @default Date.now */
  now?: (() => number) | undefined;
}

export interface AccountAccessOptions {
  /** Forward mode: the service judges which accounts a key may read. Absent: identities name their account. */
  forward?: ForwardAccountOptions | undefined;
  /** Most accounts whose latest transaction is remembered (forward mode); past it the least recently noted is forgotten. @default 1000 */
  maxAccounts?: number | undefined;
  /** Told once of each account's path found to carry several accounts' webhooks. */
  onMixedPath?: ((account: string) => void) | undefined;
}

export interface AccountAccess {
  /** Whether the service judges (forward mode), or each identity names its account (keys, tokens). */
  readonly asksTheService: boolean;
  /**
   * A transaction arrived on `account`'s path: its latest one is what proves a key is of that account (forward mode; the default account is
   * never noted).
   */
  note(account: string, transactionId: string): void;
  /** Whether `credential` may receive what the gateway holds of `transactionId`, which came in on `account`'s path. Never throws. */
  mayRead(credential: Credential, account: string, transactionId: string): Promise<boolean>;
  /** The account whose history and statistics `credential` reads. Never throws. */
  historyAccount(credential: Credential): Promise<string>;
  /**
   * Whether each transaction of `account` is judged on its own (forward mode: the default account, and a path found
   * to carry several accounts' webhooks): its lists and sums are nobody's.
   */
  judgesEachTransaction(account: string): boolean;
}

/** What a key's last verdict on an account's path said: it could read the transaction, or it was not found. */
type Said = 'yes' | 'not-found';

/** What the service answers a key that may not read a transaction: a verdict ("no"), unlike a failure. */
const NO_CODES: ReadonlySet<ErrorCode> = new Set<ErrorCode>([ErrorCode.NOT_FOUND, ErrorCode.UNAUTHENTICATED, ErrorCode.FORBIDDEN]);

/** The account a credential names itself: with the gateway's own keys and tokens. */
const namedAccount = (credential: Credential): string => accountOf(credential.identity);

const NAMED: AccountAccess = {
  asksTheService: false,
  note: () => {},
  mayRead: async (credential, account) => namedAccount(credential) === account,
  historyAccount: async (credential) => namedAccount(credential),
  judgesEachTransaction: () => false,
};

export function createAccountAccess(options: AccountAccessOptions = {}): AccountAccess {
  const { forward } = options;
  if (!forward) return NAMED;
  const { probe, ttlMs, maxEntries = 10_000, now = Date.now } = forward;
  const verdicts = createVerdicts<boolean>({
    ttlMs,
    maxEntries,
    now,
    limit: forward.limit ?? createCheckLimit(forward.checksPerSecond, now),
  });
  // Each account's latest transaction, by account name.
  const noted = boundedCache<string>({ max: options.maxAccounts ?? 1_000 });

  // What each key's last verdict on an account said, beyond the verdicts' period: the next one is compared with it.
  const lastSaid = boundedCache<Said>({ max: maxEntries });
  const mixed = new Set<string>();

  /** Whether the key may read `transactionId`, remembered under `slot` (an account, or the transaction itself). */
  async function verdict(authorization: string, slot: string, transactionId: string, account?: string): Promise<boolean> {
    const key = `${keyDigest(authorization)}${slot}`;
    const known = verdicts.get(key);
    if (known !== undefined) return known;
    const judge = async (): Promise<boolean> => {
      let said: Said;
      try {
        await probe(authorization, transactionId);
        said = 'yes';
      } catch (error) {
        if (!isGatewayError(error) || !NO_CODES.has(error.code)) throw error;
        // A 404 says "not yours"; a refused key says nothing of the path.
        if (error.code !== ErrorCode.NOT_FOUND) return false;
        said = 'not-found';
      }
      if (account !== undefined) compare(key, account, said);
      return said === 'yes';
    };
    try {
      return await verdicts.ask(key, judge, true);
    } catch {
      return false; // No verdict: denied for now, and asked again next time.
    }
  }

  /** One key told yes for one transaction of a path and "not found" for another: the path carries several accounts. */
  function compare(key: string, account: string, said: Said): void {
    const before = lastSaid.get(key);
    lastSaid.set(key, said);
    if (before === undefined || before === said || mixed.has(account)) return;
    mixed.add(account);
    options.onMixedPath?.(account);
  }

  // A digest is base64 (no `@` or `#`): an account's slot and a transaction's never meet.
  const accountSlot = (account: string) => `@${account}`;

  return {
    asksTheService: true,
    note(account, transactionId) {
      if (account !== DEFAULT_ACCOUNT) noted.set(account, transactionId);
    },
    mayRead(credential, account, transactionId) {
      if (account === DEFAULT_ACCOUNT || mixed.has(account)) return verdict(credential.authorization, `#${transactionId}`, transactionId);
      return verdict(credential.authorization, accountSlot(account), transactionId, account);
    },
    async historyAccount(credential) {
      for (const account of [...noted.keys()].sort()) {
        const transactionId = noted.peek(account);
        if (transactionId !== undefined && (await verdict(credential.authorization, accountSlot(account), transactionId, account)))
          return account;
      }
      return DEFAULT_ACCOUNT;
    },
    judgesEachTransaction: (account) => account === DEFAULT_ACCOUNT || mixed.has(account),
  };
}

/**
 * The account access of a gateway: in forward mode the service's verdicts,
 * asked with `GET /transactions/{id}` through `backend`, the REST backend
 * itself (breaker, concurrency limit, metrics), not the entity cache, which
 * could answer for a key the service no longer lets read the transaction.
 */
export function createGatewayAccountAccess(config: Config, backend: Backend, logger: Logger): AccountAccess {
  if (!config.forwardMode || !config.upstream) return createAccountAccess();
  return createAccountAccess({
    forward: {
      ...config.upstream.keyCheck,
      probe: (authorization, transactionId) => backend.getTransaction(transactionId, { authorization, identity: SYSTEM_IDENTITY }),
    },
    onMixedPath: (account) =>
      logger.error(
        { account },
        `POST /webhooks/${account} carries the webhooks of several accounts of the service (a key may read some of its transactions ` +
          `and not others): each is now shown only to keys the service lets read it, and its history is listed and summed for nobody; ` +
          `have each account send its webhooks to a path of its own`,
      ),
  });
}
