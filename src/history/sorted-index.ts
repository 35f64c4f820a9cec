/*
 * Transaction ids ordered by last update, then id, as a Redis sorted set orders
 * its members (score, then bytes; UTF-8 byte order is code point order), so the
 * in-process history pages exactly like the Redis one.
 *
 * The index is a treap (a binary search tree kept balanced by random
 * priorities) whose nodes count their subtree: insert, remove, rank and
 * count-between are O(log n) expected, and a page walks down from a bound in
 * O(log n + page). A sorted array shifted its tail on every insert or remove
 * that was not at the end: milliseconds per event at a million transactions,
 * on the event loop. No maintained library keeps both order and ranks (B+tree
 * libraries such as sorted-btree count a range by walking it).
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

interface Node<T> {
  item: T;
  priority: number;
  /** Nodes in this subtree, this one included. */
  size: number;
  left: Node<T> | undefined;
  right: Node<T> | undefined;
}

const sizeOf = <T>(node: Node<T> | undefined): number => node?.size ?? 0;

function resize<T>(node: Node<T>): Node<T> {
  node.size = 1 + sizeOf(node.left) + sizeOf(node.right);
  return node;
}

/** Splits a tree into the items below `key` and those at or above it. */
function split<T extends Keyed>(node: Node<T> | undefined, key: Keyed): [Node<T> | undefined, Node<T> | undefined] {
  if (!node) return [undefined, undefined];
  if (compareKeyed(node.item, key) < 0) {
    const [low, high] = split(node.right, key);
    node.right = low;
    return [resize(node), high];
  }
  const [low, high] = split(node.left, key);
  node.left = high;
  return [low, resize(node)];
}

/** Joins two trees whose every item of `low` is below every item of `high`. */
function merge<T>(low: Node<T> | undefined, high: Node<T> | undefined): Node<T> | undefined {
  if (!low) return high;
  if (!high) return low;
  if (low.priority > high.priority) {
    low.right = merge(low.right, high);
    return resize(low);
  }
  high.left = merge(low, high.left);
  return resize(high);
}

function insertNode<T extends Keyed>(node: Node<T> | undefined, added: Node<T>): Node<T> {
  if (!node) return added;
  if (added.priority > node.priority) {
    [added.left, added.right] = split(node, added.item);
    return resize(added);
  }
  if (compareKeyed(added.item, node.item) < 0) node.left = insertNode(node.left, added);
  else node.right = insertNode(node.right, added);
  return resize(node);
}

/** The tree without the item equal to `key`; `removed` says whether there was one. */
function removeNode<T extends Keyed>(node: Node<T> | undefined, key: Keyed, removed: { found: boolean }): Node<T> | undefined {
  if (!node) return undefined;
  const order = compareKeyed(key, node.item);
  if (order === 0) {
    removed.found = true;
    return merge(node.left, node.right);
  }
  if (order < 0) node.left = removeNode(node.left, key, removed);
  else node.right = removeNode(node.right, key, removed);
  if (removed.found) node.size -= 1;
  return node;
}

/** Ascending by (lastUpdated, transactionId). Items are kept as given (records themselves); keys are distinct. */
export class SortedIndex<T extends Keyed = Keyed> {
  private root: Node<T> | undefined;

  get size(): number {
    return sizeOf(this.root);
  }

  /** How many items are below `key`. */
  rank(key: Keyed): number {
    let below = 0;
    let node = this.root;
    while (node) {
      if (compareKeyed(node.item, key) < 0) {
        below += sizeOf(node.left) + 1;
        node = node.right;
      } else node = node.left;
    }
    return below;
  }

  /** The lowest item. */
  first(): T | undefined {
    let node = this.root;
    while (node?.left) node = node.left;
    return node?.item;
  }

  insert(item: T): void {
    this.root = insertNode(this.root, { item, priority: Math.random(), size: 1, left: undefined, right: undefined });
  }

  remove(key: Keyed): void {
    this.root = removeNode(this.root, key, { found: false });
  }

  /** How many items have lastUpdated in [since, until). */
  countBetween(since: number, until: number): number {
    return this.rank({ lastUpdated: until, transactionId: '' }) - this.rank({ lastUpdated: since, transactionId: '' });
  }

  /** The items below `key`, highest first: O(log n) to start, then O(1) amortised per item. */
  *below(key: Keyed): Generator<T, void, undefined> {
    // The path's nodes below the key whose left subtrees are still to walk, deepest last.
    const stack: Array<Node<T>> = [];
    let node = this.root;
    while (node) {
      if (compareKeyed(node.item, key) < 0) {
        stack.push(node);
        node = node.right;
      } else node = node.left;
    }
    while (stack.length > 0) {
      const next = stack.pop()!;
      yield next.item;
      for (let down = next.left; down; down = down.right) stack.push(down);
    }
  }
}
