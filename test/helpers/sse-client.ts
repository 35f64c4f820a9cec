/*
 * A GraphQL-over-SSE subscriber for yoga's "distinct connections" mode: one
 * POST with `accept: text/event-stream`, then `event: next` / `data: …` frames.
 */

export interface SseSubscription {
  status: number;
  /** Resolves with the next `next` payload, or rejects after `timeoutMs`. */
  next(timeoutMs?: number): Promise<any>;
  /** The `id:` of the last event delivered, as an EventSource would send back in Last-Event-ID. */
  lastEventId(): string | undefined;
  /** Every byte of the stream so far, as text, to check its framing. */
  raw(): string;
  /** Resolves when the stream ends: `complete` after an `event: complete` frame, else `end` (or `aborted` by close()). */
  ended: Promise<'complete' | 'end' | 'aborted'>;
  close(): void;
}

export async function sseSubscribe(
  url: string,
  query: string,
  key: string,
  variables?: Record<string, unknown>,
  headers: Record<string, string> = {},
): Promise<SseSubscription> {
  const abort = new AbortController();
  const response = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream', authorization: key, ...headers },
    body: JSON.stringify({ query, variables }),
    signal: abort.signal,
  });
  const queue: any[] = [];
  let lastId: string | undefined;
  let raw = '';
  const waiters: Array<(payload: any) => void> = [];
  let completed = false;
  let settle: (how: 'complete' | 'end' | 'aborted') => void = () => {};
  const ended = new Promise<'complete' | 'end' | 'aborted'>((resolve) => (settle = resolve));
  const deliver = (payload: any) => {
    const waiter = waiters.shift();
    if (waiter) waiter(payload);
    else queue.push(payload);
  };
  void (async () => {
    if (!response.body) return;
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      const reader = response.body.getReader();
      for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
        const text = decoder.decode(chunk.value, { stream: true });
        raw += text;
        buffer += text;
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const frame = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const lines = frame.split('\n');
          const event = lines
            .find((l) => l.startsWith('event:'))
            ?.slice(6)
            .trim();
          const id = lines
            .find((l) => l.startsWith('id:'))
            ?.slice(3)
            .trim();
          if (id) lastId = id;
          const data = lines
            .filter((l) => l.startsWith('data:'))
            .map((l) => l.slice(5).trim())
            .join('\n');
          if (event === 'next' && data) deliver(JSON.parse(data));
          if (event === 'complete') completed = true;
        }
      }
      settle(completed ? 'complete' : 'end');
    } catch {
      // Aborted by close().
      settle('aborted');
    }
  })();
  return {
    status: response.status,
    ended,
    close: () => abort.abort(),
    lastEventId: () => lastId,
    raw: () => raw,
    next(timeoutMs = 2_000) {
      if (queue.length > 0) return Promise.resolve(queue.shift());
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no SSE event within ${timeoutMs} ms`)), timeoutMs);
        waiters.push((payload) => {
          clearTimeout(timer);
          resolve(payload);
        });
      });
    },
  };
}
