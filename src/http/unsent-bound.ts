/*
 * A stream answer (SSE) for a client that may stop reading. Fastify writes a
 * web stream as the socket drains, so a stalled client would leave every
 * result for it waiting upstream, unbounded in bytes (an event bus queue
 * counts events, whatever their size). This reads the source as results come
 * and counts, in bytes, what waits for the client; past the bound the stream
 * fails and the caller resets the connection (`onCut`): the client sees its
 * stream cut, not completed, so EventSource and graphql-sse clients reconnect
 * and resume, and nothing stays queued for it in the kernel.
 * What else waits is the Node response's own buffer: its high-water mark
 * (16 KiB) and one chunk over.
 */

export class ClientTooSlowError extends Error {
  constructor(limit: number) {
    super(`The client left more than ${limit} bytes unread; its stream was cut`);
    this.name = 'ClientTooSlowError';
  }
}

/** `onCut` is told when the bound was passed: the caller closes the connection (what the kernel holds for it goes too). */
export function boundUnsent(source: ReadableStream<Uint8Array>, maxUnsentBytes: number, onCut: () => void): ReadableStream<Uint8Array> {
  const reader = source.getReader();
  let over = false;
  // A reader's cancel can wait for the read it has pending (yoga's stream is a Node Readable read
  // through an async generator, which runs a return after its pending step: the next event).
  // Cancelling the stream itself ends that read at once.
  const stopSource = (reason: unknown) => {
    void reader.cancel(reason).catch(() => {});
    void Promise.resolve()
      .then(() => source.cancel(reason))
      .catch(() => {});
  };
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        void (async () => {
          try {
            while (!over) {
              const { done, value } = await reader.read();
              if (over) return;
              if (done) {
                over = true;
                controller.close();
              } else {
                controller.enqueue(value);
                // `desiredSize` is the bound less what is queued: below zero past it.
                if ((controller.desiredSize ?? 0) >= 0) continue;
                over = true;
                controller.error(new ClientTooSlowError(maxUnsentBytes));
                stopSource(undefined);
                onCut();
              }
            }
          } catch (error) {
            if (over) return;
            over = true;
            controller.error(error);
          }
        })();
      },
      cancel(reason) {
        over = true;
        stopSource(reason);
      },
    },
    new ByteLengthQueuingStrategy({ highWaterMark: maxUnsentBytes }),
  );
}
