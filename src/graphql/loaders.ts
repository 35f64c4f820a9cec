import DataLoader from 'dataloader';
import type { Backend, CallScope, Credential, VendingQuery } from '../backends/backend.js';
import type { Caller } from '../backends/caller.js';
import type { BatchingConfig } from '../config/config.js';
import type { Transaction, Vending } from '../contract/contract.js';
import { ErrorCode, isGatewayError } from '../errors.js';
import { refuse } from '../refusals/refusals.js';

/**
 * Per-request loaders (one set per request and credential, never shared across
 * clients): repeated ids in one operation reach the backend once, and batches
 * become as few backend calls as the contract allows.
 */
export interface Loaders {
  transactionById: DataLoader<string, Transaction>;
  /** One loader per upstream `products` value, since the view changes the record. */
  vendingById(products: string | undefined): DataLoader<string, Vending>;
  /** Lists vendings and primes `vendingById` with each, so later single reads are free. */
  listVendings(products: string | undefined): Promise<Vending[]>;
  /** Forgets everything held for a transaction, so the next read sees a change. */
  forgetTransaction(id: string): void;
  /** Forgets everything: a subscription's context outlives one event. */
  clearAll(): void;
}

/**
 * Runs `work` over `items` with at most `limit` in flight; results keep input
 * order. Once `caller` has left, items not yet started are
 * dropped, failed as abandoned.
 */
async function settleWithLimit<T, R>(
  items: readonly T[],
  limit: number,
  work: (item: T) => Promise<R>,
  caller: Caller | undefined,
): Promise<Array<R | Error>> {
  const results = new Array<R | Error>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const index = next++;
      if (caller?.left) {
        results[index] = refuse.abandoned();
        continue;
      }
      try {
        results[index] = await work(items[index] as T);
      } catch (error) {
        results[index] = error instanceof Error ? error : new Error(String(error));
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

export function createLoaders(backend: Backend, credential: Credential, batching: BatchingConfig, scope?: CallScope): Loaders {
  const transactionById = new DataLoader<string, Transaction>((ids) =>
    settleWithLimit(ids, batching.transactionConcurrency, (id) => backend.getTransaction(id, credential, scope), scope?.caller),
  );

  const vendingLoaders = new Map<string, DataLoader<string, Vending>>();

  function vendingById(products: string | undefined): DataLoader<string, Vending> {
    const key = products ?? '';
    let loader = vendingLoaders.get(key);
    if (!loader) {
      const query: VendingQuery = { products };
      loader = new DataLoader<string, Vending>(async (ids) => {
        // One list call beats several single reads once the batch is large enough.
        if (ids.length < batching.vendingListThreshold) {
          return settleWithLimit(ids, ids.length, (id) => backend.getVending(id, query, credential, scope), scope?.caller);
        }
        try {
          const all = await backend.listVendings(query, credential, scope);
          const byId = new Map(all.map((vending) => [vending.vendingId, vending]));
          return ids.map((id) => byId.get(id) ?? refuse.notFound('vending', id));
        } catch (error) {
          return ids.map(() => (error instanceof Error ? error : new Error(String(error))));
        }
      });
      vendingLoaders.set(key, loader);
    }
    return loader;
  }

  return {
    transactionById,
    vendingById,
    async listVendings(products) {
      const all = await backend.listVendings({ products }, credential, scope);
      const loader = vendingById(products);
      for (const vending of all) loader.prime(vending.vendingId, vending);
      return all;
    },
    forgetTransaction: (id) => void transactionById.clear(id),
    clearAll() {
      transactionById.clearAll();
      for (const loader of vendingLoaders.values()) loader.clearAll();
    },
  };
}

/** A NOT_FOUND failure, which list fields turn into `null` rather than an error. */
export const isNotFound = (value: unknown): boolean => isGatewayError(value) && value.code === ErrorCode.NOT_FOUND;
