import DataLoader from 'dataloader';
import { ErrorCode, GatewayError, isGatewayError } from '../errors.js';
import type { HistoryRecord } from './history-record.js';
import type { HistoryStore } from './history-store.js';

/**
 * One operation's view of the history: `Transaction.history` on many
 * transactions is one store read. Made for every operation, so the loader is
 * made only when first asked.
 */
export interface HistoryReader {
  store: HistoryStore;
  record(transactionId: string): Promise<HistoryRecord | undefined>;
}

/**
 * A store that does not answer (the database away) is the client's to retry: its
 * failure says so in the gateway's words, not as an unexpected error.
 */
export function historyUnavailable(error: unknown): never {
  if (isGatewayError(error)) throw error;
  throw new GatewayError(ErrorCode.UPSTREAM_UNAVAILABLE, 'The transaction history cannot be read right now (its store does not answer); retry later', { cause: error });
}

export function createHistoryReader(store: HistoryStore): HistoryReader {
  let loader: DataLoader<string, HistoryRecord | undefined> | undefined;
  return {
    store,
    record(transactionId) {
      loader ??= new DataLoader((ids) => store.records(ids).catch(historyUnavailable));
      return loader.load(transactionId);
    },
  };
}
