import { productCountOf, totalOf, type ProductLine } from '../resolvers.js';

/*
 * The fields the hand-written peers' schema computes and the contract does not carry,
 * added to the Hive peer the way Hive Gateway users add them: additional type
 * definitions and resolvers, each naming the upstream fields it needs (`selectionSet`),
 * so the three peers' answers carry the same data. Same formulas as ../resolvers.ts.
 */

export const derivedFields = {
  additionalTypeDefs: /* GraphQL */ `
    extend type Transaction {
      total: Float!
    }
    extend type Vending {
      productCount: Int
    }
    extend type VendingListEnvelope {
      totalCount: Int!
    }
  `,
  additionalResolvers: {
    Transaction: {
      total: { selectionSet: '{ products { productPrice quantity } }', resolve: (t: { products: ProductLine[] }) => totalOf(t.products) },
    },
    Vending: { productCount: { selectionSet: '{ products { productId } }', resolve: (v: { products?: unknown }) => productCountOf(v) } },
    VendingListEnvelope: {
      totalCount: { selectionSet: '{ data { vendingId } }', resolve: (e: { data?: unknown[] }) => e.data?.length ?? 0 },
    },
  },
};
