import type { ExecutionResult } from 'graphql';
import { isAsyncIterable, type Plugin } from 'graphql-yoga';
import { clientResult } from '../graphql/client-result.js';

/*
 * Subscriptions over HTTP multipart, as Apollo Client's HttpLink asks for
 * them by default (`Accept: multipart/mixed;subscriptionSpec="1.0", …`) and
 * Apollo Router serves them: each event a part `{"payload": <result>}`, a
 * heartbeat part `{}` while nothing happens (so proxies keep the connection),
 * and the closing boundary when the subscription ends. yoga serves
 * multipart for `@defer`/`@stream` only; this adds the subscription's
 * framing, on the same result every transport gets.
 */

const BOUNDARY = 'graphql';
/** Apollo's protocol: a heartbeat every five seconds. */
const HEARTBEAT_MS = 5_000;

/** Whether the client asks for Apollo's multipart subscription framing. */
const asksForMultipartSubscription = (accept: string) => /multipart\/mixed/i.test(accept) && /subscriptionSpec/i.test(accept);

function multipartResponse(
  results: AsyncIterable<ExecutionResult>,
  fetchAPI: { ReadableStream: typeof ReadableStream; Response: typeof Response },
): Response {
  const encoder = new TextEncoder();
  const part = (json: string) => encoder.encode(`\r\ncontent-type: application/json; charset=utf-8\r\n\r\n${json}\r\n--${BOUNDARY}`);
  const iterator = results[Symbol.asyncIterator]();
  let heartbeat: NodeJS.Timeout | undefined;
  const stream = new fetchAPI.ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(encoder.encode(`\r\n--${BOUNDARY}`));
      heartbeat = setInterval(() => controller.enqueue(part('{}')), HEARTBEAT_MS);
      heartbeat.unref();
    },
    async pull(controller) {
      try {
        const next: IteratorResult<ExecutionResult, unknown> = await iterator.next();
        if (next.done !== true) return controller.enqueue(part(JSON.stringify({ payload: clientResult(next.value) })));
        clearInterval(heartbeat);
        controller.enqueue(encoder.encode('--\r\n'));
        controller.close();
      } catch (error) {
        clearInterval(heartbeat);
        controller.error(error);
      }
    },
    async cancel() {
      clearInterval(heartbeat);
      await iterator.return?.();
    },
  });
  return new fetchAPI.Response(stream, {
    status: 200,
    headers: { 'content-type': `multipart/mixed;boundary="${BOUNDARY}";subscriptionSpec="1.0"`, 'cache-control': 'no-store' },
  });
}

export function useMultipartSubscriptions(): Plugin {
  return {
    onResultProcess({ request, result, setResultProcessor }) {
      // A subscription's stream only: @defer's and @stream's keep yoga's own multipart, which their clients read.
      if (!isAsyncIterable(result) || !asksForMultipartSubscription(request.headers.get('accept') ?? '')) return;
      setResultProcessor((_result, fetchAPI) => multipartResponse(result as AsyncIterable<ExecutionResult>, fetchAPI), 'multipart/mixed');
    },
  };
}

/**
 * A stream no transport of the request takes (a subscription asked for with `Accept: application/json` only):
 * yoga answers 406 but leaves the stream made for it open, which kept a subscription (and the gauge's count) for
 * ever. Last of the result hooks: when none chose a way to write the result, its stream is ended here.
 */
export function useUntakenStreamsEnded(): Plugin {
  return {
    onResultProcess({ result, resultProcessor }) {
      if (resultProcessor === undefined && isAsyncIterable(result)) void result[Symbol.asyncIterator]().return?.();
    },
  };
}
