import type { IncomingMessage, ServerResponse } from 'node:http';
import { Request } from '@whatwg-node/fetch';
import type { Plugin } from 'graphql-yoga';

/*
 * The hot routes (GraphQL queries, the REST contract's paths) served beside
 * yoga's Fetch adapter rather than through it. The adapter runs every
 * plugin's request hooks, an abort signal, a URL pattern and a promise chain
 * per request: more than half of a small query's time on this gateway
 * (bench/RESULTS.md). Here only the hooks that must see every request run
 * (request log, metrics), in the adapter's order and with its Request and
 * Response types, so they cannot tell the two lanes apart. Whatever needs
 * more (CORS, streams, chunked bodies, GraphiQL) stays with yoga; the callers
 * decide which requests come here.
 */

/** Answers one request; the Request carries the pre-read body, if any. */
export type DirectResponder = (request: Request, url: URL) => Promise<Response>;

export interface DirectLaneOptions {
  /** Adapter-level plugins whose onRequest / onResponse hooks every request must pass, in order. */
  hooks: Plugin[];
  /** Answer to a responder that throws: never its message or stack. */
  onUnexpectedError(error: unknown, request: Request): Response;
}

async function send(res: ServerResponse, response: Response): Promise<void> {
  const text = response.body ? await response.text() : undefined;
  if (res.destroyed) return;
  res.statusCode = response.status;
  response.headers.forEach((value, key) => res.setHeader(key, value));
  // Given whole to end(), the body sets Content-Length itself.
  res.end(text);
}

type OnRequest = NonNullable<Plugin['onRequest']>;
type OnResponse = NonNullable<Plugin['onResponse']>;

export function createDirectLane({ hooks, onUnexpectedError }: DirectLaneOptions) {
  const onRequest = hooks.flatMap((hook) => (hook.onRequest ? [hook.onRequest] : [])) as OnRequest[];
  const onResponse = hooks.flatMap((hook) => (hook.onResponse ? [hook.onResponse] : [])) as OnResponse[];

  async function answer(request: Request, url: URL, respond: DirectResponder): Promise<Response> {
    let early: Response | undefined;
    for (const hook of onRequest) {
      const pending: unknown = hook({ request, url, endResponse: (response: Response) => void (early = response), serverContext: {}, fetchAPI: undefined } as never);
      // Most hooks are synchronous: waiting a tick for each would add up.
      if (pending instanceof Promise) await pending;
      if (early) return early;
    }
    try {
      return await respond(request, url);
    } catch (error) {
      return onUnexpectedError(error, request);
    }
  }

  async function write(req: IncomingMessage, res: ServerResponse, url: URL, respond: DirectResponder, body: Buffer | undefined): Promise<void> {
    const request = new Request(url.href, { method: req.method, headers: req.headers as Record<string, string>, body: body as BodyInit | undefined });
    const response = await answer(request, url, respond);
    for (const hook of onResponse) {
      const pending: unknown = hook({ request, response, serverContext: {}, fetchAPI: undefined } as never);
      if (pending instanceof Promise) await pending;
    }
    await send(res, response);
  }

  /** Serves `req` (at `url`) with `respond`. `body` is the whole request body when it has one (see small-body.ts). */
  return async function serve(req: IncomingMessage, res: ServerResponse, url: URL, respond: DirectResponder, body?: Buffer): Promise<void> {
    try {
      await write(req, res, url, respond, body);
    } catch (error) {
      // A hook or the writing failed: the masked 500 if nothing was sent yet, never a crash of the process.
      const fallback = onUnexpectedError(error, new Request(url.href, { method: req.method }));
      if (res.headersSent || res.destroyed) res.destroy();
      else await send(res, fallback);
    }
  };
}
