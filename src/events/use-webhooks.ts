import type { Plugin } from 'graphql-yoga';
import { randomUUID } from 'node:crypto';
import { Response } from '@whatwg-node/fetch';
import { errorEnvelope } from '../errors.js';
import { jsonResponse } from '../http/json-response.js';
import { ACCEPTED_ENCODINGS, readDecodedBodyText, UndecodableBody, UnsupportedEncoding } from '../http/decode-body.js';
import { BodyTooLarge } from '../http/read-body.js';
import { guardRoute } from '../http/route-guard.js';
import type { DedupeBy } from './event-log.js';
import { parseWebhookText, type TransactionUpdateEvent } from './normalize.js';
import type { WebhookVerifier } from './webhook-verifier.js';

export type WebhookOutcome =
  | 'published'
  | 'duplicate'
  /** Well-formed but about something other than a transaction update; the detail is its type. */
  | 'ignored'
  | 'bad-signature'
  | 'unreadable'
  | 'too-large'
  | 'unsupported-encoding'
  | 'unavailable';

export interface WebhookRouteOptions {
  /** @default '/webhooks' */
  path?: string;
  maxBodyBytes: number;
  /** Checks Standard Webhooks signatures; without one every body is accepted unsigned. */
  verifier: WebhookVerifier | undefined;
  /**
   * Takes the event into the event log unless it is a redelivery (resolving
   * `false`); the webhook is answered 200 once this resolves, and 503 (so the
   * sender retries) when it rejects.
   */
  publish(event: TransactionUpdateEvent, dedupeBy: DedupeBy): Promise<boolean>;
  /** Told of every webhook's outcome, for logs and metrics; the detail of `ignored` is the sender's type, unbounded. */
  onOutcome?(outcome: WebhookOutcome, detail: string | undefined): void;
  onUnexpectedError(error: unknown): void;
  /**
   * False once subscriptions are being ended for shutdown: a webhook is then
   * answered 503, so its sender retries elsewhere, rather than 200 for an
   * event no subscriber would get. @default () => true
   */
  accepting?(): boolean;
}

/** Retry-After of a 503: the event store is away, the sender should come back soon. */
const RETRY_AFTER_SECONDS = '5';

/** The longest piece of a sender's type passed on in an outcome's detail. */
const MAX_TYPE_DETAIL = 100;

/**
 * `POST /webhooks` (DESIGN §5): decode → verify → read → dedupe and log →
 * answer 200 with an empty body. The answer waits for the event to be logged,
 * never for subscribers: they are fed from the log afterwards. A webhook of
 * another type is answered 200 as soon as its signature holds, and goes no further.
 */
export function useWebhooks(options: WebhookRouteOptions): Plugin {
  const path = options.path ?? '/webhooks';
  const report = (outcome: WebhookOutcome, detail?: string) => options.onOutcome?.(outcome, detail);

  async function handle(request: Request): Promise<Response> {
    if (request.method !== 'POST') {
      return jsonResponse(errorEnvelope(`Method ${request.method} is not allowed here; use POST`), 405, { allow: 'POST' });
    }
    const text = await readBody(request);
    if (typeof text !== 'string') return text;
    const verification = options.verifier?.verify(text, request.headers);
    if (verification && !verification.ok) {
      report('bad-signature', verification.reason);
      return jsonResponse(errorEnvelope(`Webhook signature rejected: ${verification.reason}`), 401);
    }
    const result = parseWebhookText(text, {
      receivedAt: new Date().toISOString(),
      webhookId: request.headers.get('webhook-id') ?? undefined,
      madeId: `gw_${randomUUID()}`,
    });
    if (!result.ok && result.ignored) {
      report('ignored', result.ignored.type.slice(0, MAX_TYPE_DETAIL));
      return new Response(null, { status: 200 });
    }
    if (!result.ok) {
      const message = `Webhook body rejected: ${result.problems.join('; ')}`;
      report('unreadable', message);
      return jsonResponse(errorEnvelope(message), 400);
    }
    if (options.accepting && !options.accepting()) return unavailable(new Error('shutting down'));
    let published: boolean;
    try {
      published = await options.publish(result.event, result.dedupeBy);
    } catch (error) {
      // Deciding and appending are one step: nothing was remembered, so the sender's retry gets through.
      return unavailable(error);
    }
    report(published ? 'published' : 'duplicate', result.event.eventId);
    return new Response(null, { status: 200 });
  }

  /** The decoded body, or the answer when there is none to read (413, 415, 400). */
  async function readBody(request: Request): Promise<string | Response> {
    try {
      return await readDecodedBodyText(request, options.maxBodyBytes);
    } catch (error) {
      if (error instanceof BodyTooLarge) {
        report('too-large');
        return jsonResponse(errorEnvelope(error.message), 413);
      }
      if (error instanceof UnsupportedEncoding) {
        report('unsupported-encoding', error.message);
        return jsonResponse(errorEnvelope(error.message), 415, { 'accept-encoding': ACCEPTED_ENCODINGS });
      }
      if (error instanceof UndecodableBody) {
        report('unreadable', error.message);
        return jsonResponse(errorEnvelope(error.message), 400);
      }
      throw error;
    }
  }

  function unavailable(error: unknown): Response {
    report('unavailable', error instanceof Error ? error.message : String(error));
    return jsonResponse(errorEnvelope('Events cannot be taken right now; retry later'), 503, { 'retry-after': RETRY_AFTER_SECONDS });
  }

  return {
    // Synchronous for every other path: an async hook would put each request through an extra promise.
    onRequest({ request, url, endResponse }) {
      if (url.pathname !== path) return;
      return guardRoute(() => handle(request), options.onUnexpectedError).then(endResponse);
    },
  };
}
