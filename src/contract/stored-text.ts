import { LONE_SURROGATE } from './ids.js';

/*
 * Text every store can keep as it came. PostgreSQL's text holds no NUL
 * character, and a lone UTF-16 surrogate (half of a pair) has no UTF-8 form:
 * the database would refuse the one and silently replace the other, so the
 * stores would disagree. Webhooks carry fields the contract does not show,
 * and the history keeps them, so every key and string of a body is looked at.
 */

const UNSTORABLE = new RegExp(`\\u0000|${LONE_SURROGATE.source}`);

const why = (text: string) => (text.includes('\u0000') ? 'holds a NUL character' : 'holds a lone UTF-16 surrogate');

/**
 * Where `value` holds text no store can keep, in words (`data.products[0].productName: holds a NUL character`), or
 * undefined. `path` names `value` itself; a key is named by the object that holds it. The caller bounds the nesting.
 */
export function unstorableText(value: unknown, path: string): string | undefined {
  if (typeof value === 'string') return UNSTORABLE.test(value) ? `${path}: ${why(value)}` : undefined;
  if (Array.isArray(value)) {
    for (const [index, item] of value.entries()) {
      const found = unstorableText(item, `${path}[${index}]`);
      if (found) return found;
    }
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  for (const [key, item] of Object.entries(value)) {
    if (UNSTORABLE.test(key)) return `${path}: a key ${why(key)}`;
    const found = unstorableText(item, path === '' ? key : `${path}.${key}`);
    if (found) return found;
  }
  return undefined;
}
