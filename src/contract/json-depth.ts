/*
 * A bound on how deeply client-supplied JSON may nest. The contract sets no
 * limits (part 8); without one, a body of a few kilobytes nested thousands of
 * levels deep overflows the stack of any code that walks it (hashing,
 * cloning, serialising). 64 levels is far beyond any real transaction or
 * payment.
 */
export const MAX_JSON_DEPTH = 64;

/** Whether `value` nests deeper than `max` levels; walks iteratively, so it cannot overflow itself. */
export function jsonTooDeep(value: unknown, max: number = MAX_JSON_DEPTH): boolean {
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length > 0) {
    const [current, depth] = stack.pop() as [unknown, number];
    if (current === null || typeof current !== 'object') continue;
    if (depth >= max) return true;
    for (const child of Object.values(current)) stack.push([child, depth + 1]);
  }
  return false;
}

/**
 * The deepest bracket nesting of a GraphQL document, ignoring strings and
 * comments, counted without parsing: the parser itself recurses per level.
 */
export function documentNesting(source: string): number {
  let depth = 0;
  let deepest = 0;
  for (let i = 0; i < source.length; i++) {
    const char = source[i];
    if (char === '#') {
      while (i < source.length && source[i] !== '\n') i++;
    } else if (char === '"') {
      const block = source.startsWith('"""', i);
      const end = block ? source.indexOf('"""', i + 3) : i;
      if (block) i = end < 0 ? source.length : end + 2;
      else for (i++; i < source.length && source[i] !== '"'; i++) if (source[i] === '\\') i++;
    } else if (char === '{' || char === '[' || char === '(') {
      depth++;
      if (depth > deepest) deepest = depth;
    } else if (char === '}' || char === ']' || char === ')') depth--;
  }
  return deepest;
}
