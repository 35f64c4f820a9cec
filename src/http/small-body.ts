import type { IncomingMessage } from 'node:http';

/*
 * Small bodies are read before any Request is built, and handed over whole:
 * the direct lane needs them to choose, and the Fetch adapter (which takes
 * them from `req.body`) then builds its Request from the bytes instead of
 * piping the socket through a stream pipeline with an AbortController and a
 * DOMException per request. Larger or chunked bodies keep the streaming path,
 * where the body limit counts bytes as they arrive.
 */

/** Largest declared body read up front; the adapter lists the keys of what it is given. */
const SMALL_BODY_BYTES = 16 * 1024;

/** Whether the request's declared body is small enough to read up front. */
export function hasSmallBody(req: IncomingMessage): boolean {
  if (req.method !== 'POST' && req.method !== 'PUT') return false;
  const header = req.headers['content-length'];
  if (header === undefined || req.headers['transfer-encoding'] !== undefined) return false;
  const length = Number(header);
  return Number.isInteger(length) && length > 0 && length <= SMALL_BODY_BYTES;
}

/** Reads the whole body and hands it to `then`. */
export function readSmallBody(req: IncomingMessage, then: (body: Buffer) => void): void {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.once('end', () => then(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)));
  // A client gone mid-body: nothing to answer.
  req.once('error', () => req.removeAllListeners('data'));
}
