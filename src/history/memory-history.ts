import { accountOf, DEFAULT_ACCOUNT } from '../contract/accounts.js';
import type { TransactionUpdateEvent } from '../events/normalize.js';
import { createAccountHistory, type AccountHistory } from './account-history.js';
import { INTERVAL_MS } from './history-stats.js';
import type { HistoryOptions, HistoryStore } from './history-store.js';

/*
 * The history in process: one history per account (account-history.ts), each
 * bounded by HISTORY_MAX_TRANSACTIONS on its own and with its own coverage, so
 * that one account's traffic never pushes another's transactions out. An
 * account's history is made when its first event (or a payment read back for
 * it) arrives, and goes once retention has emptied it; an account that has
 * none reads as empty. The default account's is made at the start and reached
 * without a lookup: a gateway of one account costs what it did before accounts.
 */

/** How often records and days of sums past retention are looked for (a look reads one entry per day kept, per account). */
const SWEEP_EVERY_MS = INTERVAL_MS.MINUTE;

export interface MemoryHistory extends HistoryStore {
  apply(event: TransactionUpdateEvent): void;
  /** Transactions the account's history holds (default: the default account's). */
  size(account?: string): number;
  /** Buckets of sums the account's history holds (default: the default account's). */
  bucketCount(account?: string): number;
  /** Accounts with a history of their own, the default account's included. */
  accountCount(): number;
  close(): void;
}

export function createMemoryHistory(options: HistoryOptions): MemoryHistory {
  const now = options.now ?? Date.now;
  // Every account's coverage starts here: an account whose history is made later sent nothing before.
  const startedAt = options.coveredFrom ?? now();
  const main = createAccountHistory(options, startedAt);
  const others = new Map<string, AccountHistory>();
  /** What an account that has no history reads: nothing, covered from the start. Never written (see `writing`). */
  const none = createAccountHistory(options, startedAt);

  const reading = (account: string): AccountHistory => (account === DEFAULT_ACCOUNT ? main : (others.get(account) ?? none));

  function writing(account: string): AccountHistory {
    if (account === DEFAULT_ACCOUNT) return main;
    let history = others.get(account);
    if (!history) others.set(account, (history = createAccountHistory(options, startedAt)));
    return history;
  }

  function sweep(): void {
    main.sweep();
    for (const [account, history] of others) {
      history.sweep();
      // Emptied by retention, it reads as no history does, unless it dropped a transaction for the count not long ago.
      if (history.size() === 0 && history.bucketCount() === 0 && history.coveredSince() <= none.coveredSince()) others.delete(account);
    }
  }
  const sweeper = setInterval(sweep, SWEEP_EVERY_MS);
  // A store left unclosed (a test, a script) must not keep the process alive.
  sweeper.unref();

  return {
    apply: (event) => writing(accountOf(event)).apply(event),
    // Without a read-back no record can be made, so an account that has no history gets none for it.
    notePayment: async (note, readBack) => (readBack ? writing(note.account) : reading(note.account)).notePayment(note, readBack),
    keepsRecords: true,
    recent: async (query) => reading(query.account).recent(query),
    stats: async (query) => reading(query.account).stats(query),
    async records(account, ids) {
      const history = reading(account);
      return ids.map((id) => history.record(id));
    },
    coveredSince: async (account) => reading(account).coveredSince(),
    size: (account = DEFAULT_ACCOUNT) => reading(account).size(),
    bucketCount: (account = DEFAULT_ACCOUNT) => reading(account).bucketCount(),
    accountCount: () => 1 + others.size,
    close: () => clearInterval(sweeper),
  };
}
