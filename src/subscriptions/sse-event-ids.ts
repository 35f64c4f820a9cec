import { isAsyncIterable, type Plugin } from 'graphql-yoga';
import type { ExecutionResult } from 'graphql';
import type { GatewayContext } from '../graphql/context.js';
import { isPosition } from '../events/event-log.js';
import { ErrorCode } from '../errors.js';
import { clientResult } from '../graphql/client-result.js';

/*
 * Resumable subscriptions: each subscription result carries the id of the
 * event behind it (`extensions.eventId`, on every transport), and over SSE the
 * event's position in the log is the frame's `id:`, so a browser's
 * EventSource sends it back as Last-Event-ID when it reconnects
 * (https://html.spec.whatwg.org/multipage/server-sent-events.html). Only
 * positions the log wrote go into `id:` lines: a sender's text could end the
 * frame. The SSE writer is yoga's (result-processor/sse.ts) with that one
 * line added.
 */

const PING_MS = 12_000;

/** Where a result carries its event's position to the SSE writer; a symbol, so no serialiser sends it. */
const POSITION = Symbol('event position');
type Extensions = Record<string | symbol, unknown>;

/**
 * The `id:` of a frame: the position of the event behind it, or, for the
 * EVENTS_EXPIRED answer, the log's position now, so that an EventSource's
 * automatic reconnect goes on live instead of getting the same error forever.
 */
function frameId(result: ExecutionResult): string | undefined {
  const id =
    (result.extensions as Extensions | undefined)?.[POSITION] ??
    result.errors?.find((error) => error.extensions?.code === ErrorCode.EVENTS_EXPIRED)?.extensions.cursor;
  return typeof id === 'string' && isPosition(id) ? id : undefined;
}

function frame(result: ExecutionResult): string {
  const { extensions, ...rest } = clientResult(result);
  const id = frameId(result);
  const payload = extensions && Object.keys(extensions).length > 0 ? { ...rest, extensions } : rest;
  return `${id ? `id: ${id}\n` : ''}event: next\ndata: ${JSON.stringify(payload)}\n\n`;
}

/** One result (a query, or a subscription that could not start) as a stream of one. */
async function* once(result: ExecutionResult): AsyncGenerator<ExecutionResult> {
  yield result;
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

function sseResponse(
  result: AsyncIterable<ExecutionResult>,
  fetchAPI: { Response: typeof Response; ReadableStream: typeof ReadableStream; TextEncoder: typeof TextEncoder },
  stopping: () => boolean,
): Response {
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
      if (next.value != null) controller.enqueue(encoder.encode(frame(next.value)));
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
          const { eventId, position } = args.contextValue.currentEvent;
          if (eventId) setResult({ ...result, extensions: { ...result.extensions, eventId, [POSITION]: position } });
        },
      }),
    }),
    onResultProcess({ request, result, setResultProcessor }) {
      if (!(request.headers.get('accept') ?? '').includes('text/event-stream')) return;
      // Other single results keep yoga's writer, which also sets their HTTP status.
      const results = isAsyncIterable(result)
        ? (result as AsyncIterable<ExecutionResult>)
        : frameId(result as ExecutionResult)
          ? once(result as ExecutionResult)
          : undefined;
      if (results) setResultProcessor((_processed, fetchAPI) => sseResponse(results, fetchAPI, stopping), 'text/event-stream');
    },
  };
}
