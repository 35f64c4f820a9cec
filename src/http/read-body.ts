/** The body was larger than allowed: answer 413. */
export class BodyTooLarge extends Error {
  constructor(readonly limit: number) {
    super(`Request body is larger than ${limit} bytes`);
    this.name = 'BodyTooLarge';
  }
}

/**
 * Reads a request body, stopping as soon as it passes `limit` bytes, so an
 * oversized body is never held in memory whole.
 */
export async function readBodyBytes(request: Request, limit: number): Promise<Buffer> {
  const declared = Number(request.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > limit) throw new BodyTooLarge(limit);
  if (!request.body) return Buffer.alloc(0);
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = request.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel();
      throw new BodyTooLarge(limit);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}

/** {@link readBodyBytes} as UTF-8 text. */
export async function readBodyText(request: Request, limit: number): Promise<string> {
  return (await readBodyBytes(request, limit)).toString('utf8');
}
