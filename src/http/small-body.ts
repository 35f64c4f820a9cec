import type { IncomingMessage } from 'node:http';

/*
 * Small bodies are read here, before the Fetch adapter sees the request, and
 * handed to it whole: the adapter then builds its Request from the bytes
 * instead of piping the socket through a stream pipeline, which costs a
 * third of a small GraphQL request's time (an AbortController and a
 * DOMException per request). Larger, chunked or bodiless requests keep the
 * streaming path, where the body limit counts as bytes arrive.
 */

/** Largest declared body read up front; the adapter lists the keys of what it is given. */
export const SMALL_BODY_BYTES = 16 * 1024;

/** The declared length when the body is small enough to read up front, else undefined. */
export function smallBodyLength(req: IncomingMessage): number | undefined {
  if (req.method !== 'POST' && req.method !== 'PUT') return undefined;
  const header = req.headers['content-length'];
  if (header === undefined || req.headers['transfer-encoding'] !== undefined) return undefined;
  const length = Number(header);
  return Number.isInteger(length) && length > 0 && length <= SMALL_BODY_BYTES ? length : undefined;
}

/** Reads the whole body and attaches it as `req.body`, the field the adapter takes a pre-read body from. */
export function readSmallBody(req: IncomingMessage, then: () => void): void {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.once('end', () => {
    (req as IncomingMessage & { body?: Buffer }).body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
    then();
  });
  // A client gone mid-body: nothing to answer.
  req.once('error', () => req.removeAllListeners('data'));
}
