import { promisify } from 'node:util';
import { brotliDecompress, gunzip, inflate, inflateRaw, type ZlibOptions } from 'node:zlib';
import { refusalMessage } from '../refusals/transport-refusals.js';

/*
 * Request bodies sent with Content-Encoding (RFC 9110 §8.4). The limit holds
 * for the compressed bytes read AND for the decoded ones: zlib stops and fails
 * as soon as its output passes `maxOutputLength`, so a small "bomb" that would
 * inflate to gigabytes costs at most `limit` bytes of memory.
 */

/** The body was larger than allowed: answer 413. */
export class BodyTooLarge extends Error {
  constructor(readonly limit: number) {
    super(refusalMessage.bodyTooLarge(limit));
    this.name = 'BodyTooLarge';
  }
}

/** Answer 415: the coding is none this gateway decodes (RFC 7694: name the ones it does), or too many are stacked. */
export class UnsupportedEncoding extends Error {
  constructor(
    readonly coding: string,
    message = refusalMessage.encodingUnsupported(coding, ACCEPTED_ENCODINGS),
  ) {
    super(message);
    this.name = 'UnsupportedEncoding';
  }
}

/** Answer 400: the body does not decode with the coding it claims. */
export class UndecodableBody extends Error {
  constructor(readonly coding: string) {
    super(refusalMessage.bodyNotDecodable(coding));
    this.name = 'UndecodableBody';
  }
}

type Decoder = (body: Buffer, options: ZlibOptions) => Promise<Buffer>;

const gunzipAsync: Decoder = promisify(gunzip);
const inflateAsync: Decoder = promisify(inflate);
const inflateRawAsync: Decoder = promisify(inflateRaw);
const brotliAsync: Decoder = promisify(brotliDecompress);

/**
 * HTTP's "deflate" is the zlib format (RFC 9110 §8.4.1.2), but some senders
 * send raw deflate; a zlib header is recognisable (RFC 1950 §2.2), so take either.
 */
const inflateEither: Decoder = (body, options) => {
  const zlibHeader = body.length >= 2 && (body[0]! & 0x0f) === 8 && ((body[0]! << 8) | body[1]!) % 31 === 0;
  return (zlibHeader ? inflateAsync : inflateRawAsync)(body, options);
};

const DECODERS: Record<string, Decoder> = { gzip: gunzipAsync, 'x-gzip': gunzipAsync, deflate: inflateEither, br: brotliAsync };
/** Most codings undone for one body: each layer costs a pass over it, and senders apply one. */
const MAX_CODINGS = 2;
/** The value of Accept-Encoding on a 415. */
export const ACCEPTED_ENCODINGS = 'gzip, deflate, br';

/** The codings of a Content-Encoding value, in the order they were applied; throws UnsupportedEncoding. */
function codingsOf(header: string | null): string[] {
  const codings = (header ?? '')
    .split(',')
    .map((coding) => coding.trim().toLowerCase())
    .filter((coding) => coding !== '' && coding !== 'identity');
  const unknown = codings.find((coding) => !Object.hasOwn(DECODERS, coding));
  if (unknown !== undefined) throw new UnsupportedEncoding(unknown);
  if (codings.length > MAX_CODINGS) {
    const stacked = codings.join(', ');
    throw new UnsupportedEncoding(stacked, refusalMessage.tooManyEncodings(stacked, MAX_CODINGS));
  }
  return codings;
}

/**
 * Undoes a body's Content-Encoding, as UTF-8 text. Throws BodyTooLarge (413)
 * past `limit` decoded bytes, UnsupportedEncoding (415), UndecodableBody (400)
 * for corrupt data.
 */
export async function decodeBodyText(bytes: Buffer, contentEncoding: string | undefined, limit: number): Promise<string> {
  const codings = codingsOf(contentEncoding ?? null);
  let body = bytes;
  // Codings are listed in the order applied, so they are undone last first.
  for (const coding of codings.reverse()) body = await decode(coding, body, limit);
  return body.toString('utf8');
}

async function decode(coding: string, body: Buffer, limit: number): Promise<Buffer> {
  try {
    return await DECODERS[coding]!(body, { maxOutputLength: limit });
  } catch (error) {
    if ((error as { code?: unknown }).code === 'ERR_BUFFER_TOO_LARGE') throw new BodyTooLarge(limit);
    throw new UndecodableBody(coding);
  }
}
