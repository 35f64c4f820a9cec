import type { Plugin } from 'graphql-yoga';
import { randomUUID } from 'node:crypto';
import { Response } from '@whatwg-node/fetch';
import { errorEnvelope } from '../errors.js';
import { jsonResponse } from '../http/json-response.js';
import { BodyTooLarge, readBodyText } from '../http/read-body.js';
import { guardRoute } from '../http/route-guard.js';
import type { DedupeBy } from './event-log.js';
import { parseWebhookText, type TransactionUpdateEvent } from './normalize.js';
import type { WebhookVerifier } from './webhook-verifier.js';

export type WebhookOutcome = 'published' | 'duplicate' | 'bad-signature' | 'unreadable' | 'too-large' | 'unavailable';

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
  /** Told of every webhook's outcome, for logs and metrics. */
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

/**
 * `POST /webhooks` (DESIGN §5): verify → read → dedupe and log → answer 200
 * with an empty body. The answer waits for the event to be logged, never for
 * subscribers: they are fed from the log afterwards.
 */
export function useWebhooks(options: WebhookRouteOptions): Plugin {
  const path = options.path ?? '/webhooks';
  const report = (outcome: WebhookOutcome, detail?: string) => options.onOutcome?.(outcome, detail);

  async function handle(request: Request): Promise<Response> {
    if (request.method !== 'POST') {
      return jsonResponse(errorEnvelope(`Method ${request.method} is not allowed here; use POST`), 405, { allow: 'POST' });
    }
    let text: string;
    try {
      text = await readBodyText(request, options.maxBodyBytes);
    } catch (error) {
      if (!(error instanceof BodyTooLarge)) throw error;
      report('too-large');
      return jsonResponse(errorEnvelope(error.message), 413);
    }
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
