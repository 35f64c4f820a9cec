import type { ProductLine, Transaction, Vending } from '../contract/contract.js';
import { builder } from './builder.js';

/** Which form of `products` a vending was read with (contract part 4). */
export type ProductsViewValue = 'FLAT' | 'PLANOGRAM';

/** A vending together with the view it was read in, since the view decides its `products`. */
export interface VendingInView {
  vending: Vending;
  view: ProductsViewValue;
}

/*
 * Shared object refs, declared apart from their fields so type files can refer
 * to each other without circular imports.
 */
export const ProductLineRef = builder.objectRef<ProductLine>('ProductLine');
export const TransactionRef = builder.objectRef<Transaction>('Transaction');
export const VendingRef = builder.objectRef<VendingInView>('Vending');
