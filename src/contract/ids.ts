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

/*
 * Characters a service could route on. An id travels percent-encoded inside
 * one path segment, which is safe only while the service routes before it
 * decodes: `/` and `\` (a path separator to WHATWG URL parsers and to many
 * servers once decoded), and control characters (NUL ends a string in C, CR/LF
 * end an HTTP line; the rest have no place in an id). C0, DEL and C1.
 */
const ROUTABLE = /[/\\\p{Cc}]/u;
/** Half of a UTF-16 surrogate pair without its other half (String.prototype.isWellFormed, which ES2023 lacks). */
export const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * Why `id` is not text an id can be, or undefined when it can: empty, over
 * MAX_ID_BYTES, or holding a lone surrogate (half of a UTF-16 pair: it has no
 * UTF-8 form, so it can be neither put in a URL nor stored as it came).
 * The rule for every id the gateway only keeps (event ids); ids of the
 * contract's resources also pass `idProblem`.
 */
export function textIdProblem(id: string): string | undefined {
  if (id.trim() === '') return 'must not be empty';
  if (idTooLong(id)) return `must be at most ${MAX_ID_BYTES} bytes (UTF-8)`;
  if (LONE_SURROGATE.test(id)) return 'must be text (it holds a lone UTF-16 surrogate)';
  return undefined;
}

/**
 * Why `id` cannot name a resource of the contract, or undefined when it can:
 * the one rule for every surface that takes one (GraphQL arguments, REST
 * paths, webhooks) and for the REST backend that puts it in a path.
 * Besides `textIdProblem`: no character a service could route on (above), and
 * not `.` or `..`, which mean "here" and "parent" to every URL parser,
 * percent-encoded or not (RFC 3986 §5.2.4, WHATWG URL's "double-dot segment").
 */
export function idProblem(id: string): string | undefined {
  const problem = textIdProblem(id);
  if (problem) return problem;
  if (id === '.' || id === '..') return 'must not be "." or ".."';
  if (ROUTABLE.test(id)) return 'must not hold "/", "\\" or control characters';
  return undefined;
}
