import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fromMicro } from '../../src/history/history-record.js';
import { topProducts, type ProductTotal } from '../../src/history/history-stats.js';
import { runs } from './arbitraries.js';

/*
 * The top products are picked in one pass rather than by sorting every
 * product of the range; this holds the pick to the full sort it replaced,
 * ties included (few distinct figures, so equal quantities and amounts are
 * common), and the units to the six-decimal text they were read through.
 */

const fullSort = (products: readonly ProductTotal[], count: number, by: 'quantity' | 'amount') => {
  const other = by === 'quantity' ? 'amount' : 'quantity';
  return [...products].sort((a, b) => b[by] - a[by] || b[other] - a[other] || (a.productId < b.productId ? -1 : 1)).slice(0, count);
};

const product = fc.record({
  productId: fc.string({ minLength: 1, maxLength: 3 }),
  productName: fc.constant(null),
  quantity: fc.integer({ min: 0, max: 4 }),
  amount: fc.integer({ min: 0, max: 4 }).map((n) => n * 0.25),
});

describe('top products', () => {
  it('are the first of the full sort, whatever the ties', () => {
    const products = fc.uniqueArray(product, { selector: (p) => p.productId, maxLength: 60 });
    fc.assert(
      fc.property(products, fc.integer({ min: 0, max: 70 }), fc.constantFrom('quantity' as const, 'amount' as const), (list, count, by) => {
        expect(topProducts(list, count, by)).toEqual(fullSort(list, count, by));
      }),
      runs(500),
    );
  });

  it('are in units as their six-decimal text reads', () => {
    fc.assert(
      fc.property(fc.integer({ min: -(2 ** 53) + 1, max: 2 ** 53 - 1 }), (micro) => {
        expect(fromMicro(micro)).toBe(Number((micro / 1_000_000).toFixed(6)));
      }),
      runs(2_000),
    );
  });
});
