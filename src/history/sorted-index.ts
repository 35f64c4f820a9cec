/*
 * Transaction ids ordered by last update, then id, as a Redis sorted set orders
 * its members (score, then bytes; UTF-8 byte order is code point order), so the
 * in-process history pages exactly like the Redis one.
 */

export interface Keyed {
  lastUpdated: number;
  transactionId: string;
}

/** Code point order (JavaScript's `<` compares UTF-16 units, which puts U+E000–U+FFFF after astral characters). */
export function compareIds(a: string, b: string): number {
  if (a === b) return 0;
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i += 1) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    // Only a surrogate against a unit at or above U+E000 compares differently by code point.
    const xs = x >= 0xd800 && x <= 0xdfff;
    const ys = y >= 0xd800 && y <= 0xdfff;
    if (xs !== ys && Math.max(x, y) >= 0xe000) return xs ? 1 : -1;
    return x - y;
  }
  return a.length - b.length;
}

export const compareKeyed = (a: Keyed, b: Keyed): number => a.lastUpdated - b.lastUpdated || compareIds(a.transactionId, b.transactionId);

/** Ascending; updates land at the end, so inserts are mostly pushes. Items are kept as given (records themselves). */
export class SortedIndex<T extends Keyed = Keyed> {
  readonly items: T[] = [];

  get size(): number {
    return this.items.length;
  }

  /** The index of the first item not below `key`. */
  lowerBound(key: Keyed): number {
    let low = 0;
    let high = this.items.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (compareKeyed(this.items[mid]!, key) < 0) low = mid + 1;
      else high = mid;
    }
    return low;
  }

  insert(key: T): void {
    const last = this.items.at(-1);
    if (!last || compareKeyed(last, key) < 0) this.items.push(key);
    else this.items.splice(this.lowerBound(key), 0, key);
  }

  remove(key: Keyed): void {
    const at = this.lowerBound(key);
    if (this.items[at]?.transactionId === key.transactionId) this.items.splice(at, 1);
  }

  /** How many items have lastUpdated in [since, until). */
  countBetween(since: number, until: number): number {
    return this.lowerBound({ lastUpdated: until, transactionId: '' }) - this.lowerBound({ lastUpdated: since, transactionId: '' });
  }
}
