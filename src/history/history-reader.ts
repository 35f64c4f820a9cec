import DataLoader from 'dataloader';
import type { Credential } from '../backends/backend.js';
import { DEFAULT_ACCOUNT } from '../contract/accounts.js';
import { ErrorCode, GatewayError, isGatewayError } from '../errors.js';
import type { HistoryRecord } from './history-record.js';
import type { HistoryStore } from './history-store.js';

/**
 * One operation's view of the history: one account's (every read of the
 * operation names it), and `Transaction.history` on many transactions is one
 * store read. Made for every operation, so the loader is made only when first
 * asked.
 */
export interface HistoryReader {
  store: HistoryStore;
  /** The account whose history the operation reads. */
  account: string;
  record(transactionId: string): Promise<HistoryRecord | undefined>;
}

/**
 * Whose history a caller reads, and whose record its payment updates go to:
 * the account of its identity (none named: the default account). The one
 * place that says it.
 */
export function historyAccountOf(credential: Credential | undefined): string {
  return credential?.identity?.account ?? DEFAULT_ACCOUNT;
}

/**
 * A store that does not answer (the database away) is the client's to retry: its
 * failure says so in the gateway's words, not as an unexpected error.
 */
export function historyUnavailable(error: unknown): never {
  if (isGatewayError(error)) throw error;
  throw new GatewayError(ErrorCode.UPSTREAM_UNAVAILABLE, 'The transaction history cannot be read right now (its store does not answer); retry later', { cause: error });
}

export function createHistoryReader(store: HistoryStore, account: string): HistoryReader {
  let loader: DataLoader<string, HistoryRecord | undefined> | undefined;
  return {
    store,
    account,
    record(transactionId) {
      loader ??= new DataLoader((ids) => store.records(account, ids).catch(historyUnavailable));
      return loader.load(transactionId);
    },
  };
}
