import DataLoader from 'dataloader';
import type { Credential } from '../backends/backend.js';
import { DEFAULT_ACCOUNT } from '../contract/accounts.js';
import { isGatewayError } from '../errors.js';
import { refuse } from '../refusals/refusals.js';
import type { HistoryRecord } from './history-record.js';
import type { HistoryStore } from './history-store.js';

/** Which account's history a credential reads (src/auth/account-access.ts says it for every surface). */
export interface HistoryAccounts {
  historyAccount(credential: Credential): Promise<string>;
  /** Whether each transaction of `account` is judged on its own: its lists and sums are nobody's to read. */
  judgesEachTransaction(account: string): boolean;
}

/**
 * One operation's view of the history: one account's, the one its caller
 * reads (asked once per operation: in forward mode the service may be asked),
 * and `Transaction.history` on many transactions is one store read. Made for
 * every operation, so the account and the loader are made only when first asked.
 */
export interface HistoryReader {
  store: HistoryStore;
  /** The account whose history the operation reads. */
  account(): Promise<string>;
  /**
   * The account whose lists and statistics the operation reads; refused where the gateway cannot tell
   * whose each transaction is (forward mode, webhooks of `POST /webhooks`).
   */
  listedAccount(): Promise<string>;
  record(transactionId: string): Promise<HistoryRecord | undefined>;
}

/**
 * A store that does not answer (the database away) is the client's to retry: its
 * failure says so in the gateway's words, not as an unexpected error.
 */
export function historyUnavailable(error: unknown): never {
  if (isGatewayError(error)) throw error;
  throw refuse.historyUnavailable(error);
}

const unlisted = (account: string) => refuse.historyUnlisted(account === DEFAULT_ACCOUNT ? undefined : account);

export function createHistoryReader(store: HistoryStore, credential: Credential, accounts: HistoryAccounts): HistoryReader {
  let account: Promise<string> | undefined;
  let loader: DataLoader<string, HistoryRecord | undefined> | undefined;
  const reader: HistoryReader = {
    store,
    account: () => (account ??= accounts.historyAccount(credential)),
    async listedAccount() {
      const listed = await reader.account();
      if (accounts.judgesEachTransaction(listed)) throw unlisted(listed);
      return listed;
    },
    record(transactionId) {
      loader ??= new DataLoader(async (ids) => store.records(await reader.account(), ids).catch(historyUnavailable));
      return loader.load(transactionId);
    },
  };
  return reader;
}
