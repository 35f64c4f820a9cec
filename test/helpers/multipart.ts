/*
 * A multipart/mixed GraphQL answer read as a client reads it: the parts of
 * a subscription (Apollo's subscriptionSpec, each result in `payload`) and of
 * an incremental delivery (@defer's deferSpec) alike, whatever the boundary.
 */

/** The JSON bodies of the parts in `text` so far (a part's `payload` unwrapped; the empty heartbeat `{}` left out). */
export function multipartParts(text: string): Array<Record<string, unknown>> {
  const bodies = [...text.matchAll(/\r\n\r\n([\s\S]*?)(?=\r\n--)/g)].map((match) => match[1]!.trim());
  return bodies
    .filter((body) => body.startsWith('{') && body !== '{}')
    .map((body) => JSON.parse(body) as Record<string, unknown> & { payload?: Record<string, unknown> })
    .map((part) => part.payload ?? part);
}

/**
 * Reads `response` part by part until `enough` (given the parts so far, and whether the stream ended) returns a value;
 * resolves that value. A response that is not multipart is one part, its JSON body.
 */
export async function readMultipart<T>(
  response: Response,
  enough: (parts: Array<Record<string, unknown>>, done: boolean) => T | undefined,
): Promise<T> {
  if (!(response.headers.get('content-type') ?? '').startsWith('multipart/mixed')) {
    const whole = enough([(await response.json()) as Record<string, unknown>], true);
    if (whole === undefined) throw new Error('a JSON answer that is not enough');
    return whole;
  }
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let text = '';
  for (;;) {
    const { value, done } = await reader.read();
    text += value ?? '';
    const found = enough(multipartParts(text), done);
    if (found !== undefined) return found;
    if (done) throw new Error(`a multipart answer that ended before it was enough: ${text}`);
  }
}
