import DataLoader from 'dataloader';
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

export function createHistoryReader(store: HistoryStore): HistoryReader {
  let loader: DataLoader<string, HistoryRecord | undefined> | undefined;
  return {
    store,
    record(transactionId) {
      loader ??= new DataLoader((ids) => store.records(ids), { cache: true });
      return loader.load(transactionId);
    },
  };
}
