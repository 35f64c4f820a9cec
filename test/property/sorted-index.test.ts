import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compareKeyed, SortedIndex, type Keyed } from '../../src/history/sorted-index.js';
import { runs } from './arbitraries.js';

/*
 * The history's index against the simplest thing that is obviously right: a
 * sorted array. Random inserts and removes (of present and absent keys, ties
 * on time broken by id), then every read the history makes.
 */

const IDS = ['a', 'b', 'B', 'ab', 'é', '\uE000', '😀'];
const key = fc.record({ lastUpdated: fc.integer({ min: 0, max: 20 }), transactionId: fc.constantFrom(...IDS) });
const step = fc.oneof(fc.record({ insert: key }), fc.record({ remove: key }));

describe('SortedIndex', () => {
  it('answers as a sorted array does', () => {
    fc.assert(
      fc.property(
        fc.array(step, { maxLength: 200 }),
        key,
        fc.integer({ min: 0, max: 21 }),
        fc.integer({ min: 0, max: 21 }),
        (steps, bound, a, b) => {
          const index = new SortedIndex();
          let reference: Keyed[] = [];
          const same = (x: Keyed) => (y: Keyed) => compareKeyed(x, y) === 0;
          for (const s of steps) {
            if ('insert' in s) {
              // Keys are distinct in the history (one entry per transaction): insert only absent ones.
              if (reference.some(same(s.insert))) continue;
              index.insert(s.insert);
              reference = [...reference, s.insert].sort(compareKeyed);
            } else {
              index.remove(s.remove);
              reference = reference.filter((y) => !same(s.remove)(y));
            }
          }
          expect(index.size).toBe(reference.length);
          expect(index.first()).toEqual(reference[0]);
          expect(index.rank(bound)).toBe(reference.filter((y) => compareKeyed(y, bound) < 0).length);
          expect([...index.below(bound)]).toEqual(reference.filter((y) => compareKeyed(y, bound) < 0).reverse());
          const [since, until] = [Math.min(a, b), Math.max(a, b)];
          expect(index.countBetween(since, until)).toBe(reference.filter((y) => y.lastUpdated >= since && y.lastUpdated < until).length);
        },
      ),
      runs(300),
    );
  });

  it('keeps a deep index balanced enough to insert keys in order without a deep recursion', () => {
    const index = new SortedIndex();
    for (let i = 0; i < 200_000; i += 1) index.insert({ lastUpdated: i, transactionId: 't' });
    index.remove({ lastUpdated: 0, transactionId: 't' });
    expect(index.size).toBe(199_999);
    expect(index.countBetween(10, 20)).toBe(10);
  });
});
