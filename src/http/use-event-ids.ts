import { isAsyncIterable, type Plugin } from 'graphql-yoga';
import type { ExecutionResult } from 'graphql';
import type { GatewayContext } from '../context.js';

/*
 * Resumable subscriptions: each subscription result carries the id of the
 * event behind it (`extensions.eventId`, on every transport), and over SSE the
 * same id is the frame's `id:`, so a browser's EventSource sends it back as
 * Last-Event-ID when it reconnects (https://html.spec.whatwg.org/multipage/server-sent-events.html).
 * The SSE writer is yoga's (result-processor/sse.ts) with that one line added.
 */

const PING_MS = 12_000;

function eventIdOf(result: ExecutionResult): string | undefined {
  const id = result.extensions?.eventId;
  return typeof id === 'string' ? id : undefined;
}

export interface EventIdsOptions {
  /**
   * Whether the gateway is stopping: a stream that ends then sends no
   * `complete`, so EventSource and graphql-sse clients reconnect (with
   * Last-Event-ID) instead of taking the operation as finished.
   * @default never
   */
  stopping?: () => boolean;
}

function sseResponse(result: AsyncIterable<ExecutionResult>, fetchAPI: { Response: typeof Response; ReadableStream: typeof ReadableStream; TextEncoder: typeof TextEncoder }, stopping: () => boolean): Response {
  const encoder = new fetchAPI.TextEncoder();
  const iterator = result[Symbol.asyncIterator]();
  let ping: NodeJS.Timeout | undefined;
  const stream = new fetchAPI.ReadableStream<Uint8Array>({
    start(controller) {
      // A first comment flushes the headers through proxies and browsers.
      controller.enqueue(encoder.encode(':\n\n'));
      ping = setInterval(() => {
        if (controller.desiredSize === null) clearInterval(ping);
        else if (controller.desiredSize > 0) controller.enqueue(encoder.encode(':\n\n'));
      }, PING_MS);
    },
    async pull(controller) {
      const next = await iterator.next();
      if (next.value != null) {
        const { extensions, ...rest } = next.value;
        const id = eventIdOf(next.value);
        const payload = extensions && Object.keys(extensions).length > 0 ? { ...rest, extensions } : rest;
        controller.enqueue(encoder.encode(`${id ? `id: ${id}\n` : ''}event: next\ndata: ${JSON.stringify(payload)}\n\n`));
      }
      if (next.done) {
        if (!stopping()) controller.enqueue(encoder.encode('event: complete\ndata:\n\n'));
        clearInterval(ping);
        controller.close();
      }
    },
    async cancel() {
      clearInterval(ping);
      await iterator.return?.();
    },
  });
  return new fetchAPI.Response(stream, {
    status: 200,
    headers: { 'content-type': 'text/event-stream', connection: 'keep-alive', 'cache-control': 'no-cache', 'content-encoding': 'none' },
  });
}

export function useEventIds({ stopping = () => false }: EventIdsOptions = {}): Plugin<GatewayContext> {
  return {
    onSubscribe: () => ({
      onSubscribeResult: () => ({
        onNext({ args, result, setResult }) {
          const eventId = args.contextValue.currentEvent.eventId;
          if (eventId) setResult({ ...result, extensions: { ...result.extensions, eventId } });
        },
      }),
    }),
    onResultProcess({ request, result, setResultProcessor }) {
      if (!isAsyncIterable(result) || !(request.headers.get('accept') ?? '').includes('text/event-stream')) return;
      setResultProcessor((processed, fetchAPI) => sseResponse(processed as AsyncIterable<ExecutionResult>, fetchAPI as never, stopping), 'text/event-stream');
    },
  };
}
