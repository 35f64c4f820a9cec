/*
 * The hand-written peers' schema (apollo/schema.graphql) and resolvers, shared by
 * Apollo and Mercurius so the two differ only in their server and REST client.
 * A resolver reads through `reads(context)`: each peer's per-request client.
 */

export interface ProductLine {
  productId: string;
  productName?: string | null;
  productPrice?: number | null;
  quantity?: number | null;
}
export interface Transaction {
  transactionId: string;
  customerId?: string | null;
  status: string;
  products: ProductLine[];
}
export interface Vending {
  vendingId: string;
  products?: unknown;
  [field: string]: unknown;
}

/**
 * The contract's reads (GET /transactions/{id}, GET /vendings/{id}?products=flat, GET /vendings?products=flat), unwrapped from `{data}`.
 */
export interface VendingReads {
  getTransaction(id: string): Promise<Transaction>;
  getVending(id: string): Promise<Vending>;
  getVendings(): Promise<Vending[]>;
}

/** A variable the peer's process cannot start without (each peer is a child process entry). */
export const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
};
/** Where a peer listens: the PORT and HOST the harness gives. */
export const listenOn = { port: Number(process.env.PORT ?? 0), host: process.env.HOST ?? '127.0.0.1' };

export const SCHEMA_FILE = new URL('./apollo/schema.graphql', import.meta.url);

/** Transaction.total: Σ productPrice × quantity, a missing quantity counting as 1. */
export const totalOf = (products: ProductLine[]): number => products.reduce((sum, p) => sum + (p.productPrice ?? 0) * (p.quantity ?? 1), 0);

export const productCountOf = (v: { products?: unknown }): number | null => (Array.isArray(v.products) ? v.products.length : null);

export function peerResolvers<Context>(reads: (context: Context) => VendingReads) {
  return {
    Query: {
      transaction: (_: unknown, { id }: { id: string }, context: Context) => reads(context).getTransaction(id),
      transactions: (_: unknown, { ids }: { ids: string[] }, context: Context) =>
        Promise.all(ids.map((id) => reads(context).getTransaction(id))),
      vending: (_: unknown, { id }: { id: string }, context: Context) => reads(context).getVending(id),
      vendings: async (_: unknown, __: unknown, context: Context) => ({ totalCount: (await reads(context).getVendings()).length }),
    },
    Transaction: { total: (t: Transaction) => totalOf(t.products) },
    Vending: { productCount: (v: Vending) => productCountOf(v) },
  };
}
