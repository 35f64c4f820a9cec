import { accountOf, DEFAULT_ACCOUNT } from '../../contract/accounts.js';
import type { PaymentUpdate, Transaction, Vending } from '../../contract/contract.js';
import { refuse } from '../../refusals/refusals.js';
import type { Backend, Credential, VendingQuery } from '../backend.js';
import { createDemoData, type DemoData, type DemoVending } from './demo-data.js';
import { renderVending, type ProductsShape } from './vending-views.js';

export interface MemoryBackendOptions {
  /** The `products` parameter values this backend answers, as the upstream would (PRODUCTS_FLAT, PRODUCTS_PLANOGRAM). */
  productsValues: Record<ProductsShape, string>;
  /**
   * Starting data; each backend gets its own copy.
   * @default createDemoData()
   */
  data?: DemoData;
}

export interface MemoryBackend extends Backend {
  /** Sets a transaction's status, as the service does when a sale progresses. */
  setTransactionStatus(id: string, status: string): Transaction;
  /** Ids of every transaction held, in insertion order. */
  transactionIds(): string[];
  /** Changes a machine's state, as the service does when a machine goes offline or is disabled. */
  setVendingState(id: string, state: Partial<Pick<DemoVending, 'status' | 'online' | 'enabled'>>): void;
  /** Ids of every machine held. */
  vendingIds(): string[];
}

/** The embedded backend: the contract's service held in memory, with demo data. */
export function createMemoryBackend(options: MemoryBackendOptions): MemoryBackend {
  const values = options.productsValues;
  const data = structuredClone(options.data ?? createDemoData());
  const transactions = new Map(data.transactions.map((t) => [t.transactionId, t]));
  const vendings = new Map(data.vendings.map((v) => [v.vendingId, v]));
  const listeners = new Set<(transaction: Transaction) => void>();

  function shapeOf(query: VendingQuery): ProductsShape {
    if (query.products === undefined || query.products === values.flat) return 'flat';
    if (query.products === values.planogram) return 'planogram';
    throw refuse.productsUnknown(values.flat, values.planogram, query.products);
  }

  /**
   * The transaction, as the default account's service shows it to `credential`: a key or token of another
   * account reads none of them, as the real service lets a key read its own account's transactions only.
   */
  function transactionOrThrow(id: string, credential?: Credential): Transaction {
    const found = transactions.get(id);
    const ofAnother = accountOf(credential?.identity) !== DEFAULT_ACCOUNT;
    if (!found || ofAnother) throw refuse.notFound('transaction', id);
    return found;
  }

  /** When each transaction last changed (here, or by a webhook noted): an older webhook does not overwrite it. */
  const changedAt = new Map<string, number>();

  function changed(transaction: Transaction): Transaction {
    changedAt.set(transaction.transactionId, Date.now());
    for (const listener of listeners) listener(structuredClone(transaction));
    return structuredClone(transaction);
  }

  return {
    async getTransaction(id, credential) {
      return structuredClone(transactionOrThrow(id, credential));
    },
    // The machines are the default account's, as its transactions are: another account's key reads none of them.
    async getVending(id, query, credential) {
      const shape = shapeOf(query);
      const machine: DemoVending | undefined = vendings.get(id);
      if (!machine || accountOf(credential?.identity) !== DEFAULT_ACCOUNT) throw refuse.notFound('vending', id);
      return renderVending(machine, shape);
    },
    async listVendings(query, credential): Promise<Vending[]> {
      const shape = shapeOf(query);
      if (accountOf(credential?.identity) !== DEFAULT_ACCOUNT) return [];
      return [...vendings.values()].map((machine) => renderVending(machine, shape));
    },
    async updatePayment(id, payment: PaymentUpdate, credential) {
      const transaction = transactionOrThrow(id, credential);
      transaction.payment = structuredClone(payment);
      changed(transaction);
      return {};
    },
    setTransactionStatus(id, status) {
      const transaction = transactionOrThrow(id);
      transaction.status = status;
      return changed(transaction);
    },
    noteTransactionUpdate(update, at = Date.now(), account = DEFAULT_ACCOUNT) {
      // The memory backend plays the service: a webhook about a transaction is
      // the service's word on it, so it is stored (added when new), quietly,
      // unless the service already said something later. It plays one
      // account's service, the default one: another account's webhooks tell it
      // nothing, and its keys read none of that account's transactions.
      if (account !== DEFAULT_ACCOUNT) return;
      if (at < (changedAt.get(update.transactionId) ?? Number.NEGATIVE_INFINITY)) return;
      changedAt.set(update.transactionId, at);
      const current = transactions.get(update.transactionId);
      transactions.set(update.transactionId, { ...current, ...structuredClone(update) });
    },
    heldTransaction(id, account) {
      const found = account === DEFAULT_ACCOUNT ? transactions.get(id) : undefined;
      return found && structuredClone(found);
    },
    watchTransactionChanges(listener) {
      listeners.add(listener);
      return () => void listeners.delete(listener);
    },
    transactionIds: () => [...transactions.keys()],
    setVendingState(id, state) {
      const machine = vendings.get(id);
      if (!machine) throw refuse.notFound('vending', id);
      Object.assign(machine, state);
    },
    vendingIds: () => [...vendings.keys()],
    async close() {},
  };
}
