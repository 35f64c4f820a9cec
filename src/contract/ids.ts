/*
 * A bound on ids taken from clients and senders. The contract shows
 * UUID-shaped ids (part 2) and sets no limit; without one, an id of a
 * megabyte travels to the upstream in a path and back in every error that
 * names it. 256 bytes of UTF-8 is far beyond any real id.
 */
export const MAX_ID_BYTES = 256;

/** Whether `id` is longer than `MAX_ID_BYTES` once encoded as UTF-8. */
export function idTooLong(id: string): boolean {
  // Cheap first: no string of at most a quarter of the bound in UTF-16 units can pass it in UTF-8.
  return id.length > MAX_ID_BYTES / 4 && Buffer.byteLength(id, 'utf8') > MAX_ID_BYTES;
}

/**
 * Why `id` cannot name a resource of the contract, or undefined when it can.
 * `.` and `..` cannot: an id travels as one path segment (`/transactions/{id}`),
 * and those two segments mean "here" and "parent" to every URL parser,
 * percent-encoded or not (RFC 3986 §5.2.4, WHATWG URL's "double-dot segment").
 */
export function idProblem(id: string): string | undefined {
  if (id.trim() === '') return 'must not be empty';
  if (idTooLong(id)) return `must be at most ${MAX_ID_BYTES} bytes (UTF-8)`;
  if (id === '.' || id === '..') return 'must not be "." or ".."';
  return undefined;
}
