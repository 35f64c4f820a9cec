import type { Plugin } from 'graphql-yoga';
import { errorEnvelope } from '../errors.js';
import { jsonResponse } from '../http/json-response.js';
import { BodyTooLarge, readBodyText } from '../http/read-body.js';
import type { DedupeStore } from './dedupe-store.js';
import { parseWebhookText, type TransactionUpdateEvent } from './normalize.js';
import type { WebhookVerifier } from './webhook-verifier.js';

export type WebhookOutcome = 'published' | 'duplicate' | 'bad-signature' | 'unreadable' | 'too-large';

export interface WebhookRouteOptions {
  /** @default '/webhooks' */
  path?: string;
  maxBodyBytes: number;
  /** Checks Standard Webhooks signatures; without one every body is accepted unsigned. */
  verifier: WebhookVerifier | undefined;
  dedupe: DedupeStore;
  /** How long an id (webhook-id or envelope id) is remembered. @default 86400000 (24 h) */
  idTtlMs?: number;
  /** How long a legacy body without ids is remembered by its content. @default 300000 (5 min) */
  contentTtlMs?: number;
  /** Receives each distinct event, after the sender has its answer. */
  onEvent(event: TransactionUpdateEvent): Promise<void> | void;
  /** Told of every webhook's outcome, for logs and metrics. */
  onOutcome?(outcome: WebhookOutcome, detail: string | undefined): void;
}

/**
 * `POST /webhooks` (DESIGN §5): verify → read → dedupe → answer 200 with an
 * empty body → publish. The answer never waits for subscribers.
 */
export function useWebhooks(options: WebhookRouteOptions): Plugin {
  const path = options.path ?? '/webhooks';
  const idTtlMs = options.idTtlMs ?? 86_400_000;
  const contentTtlMs = options.contentTtlMs ?? 300_000;
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
    });
    if (!result.ok) {
      const message = `Webhook body rejected: ${result.problems.join('; ')}`;
      report('unreadable', message);
      return jsonResponse(errorEnvelope(message), 400);
    }
    const ttl = result.dedupeKey.startsWith('content:') ? contentTtlMs : idTtlMs;
    if (!(await options.dedupe.claim(result.dedupeKey, ttl))) {
      report('duplicate', result.dedupeKey);
      return new Response(null, { status: 200 });
    }
    // Published once the answer is on its way: the sender waits for nobody.
    setImmediate(() => {
      Promise.resolve(options.onEvent(result.event)).then(
        () => report('published', result.event.eventId),
        // The claim is given back so the sender's retry can deliver it.
        () => options.dedupe.release(result.dedupeKey),
      );
    });
    return new Response(null, { status: 200 });
  }

  return {
    async onRequest({ request, url, endResponse }) {
      if (url.pathname === path) endResponse(await handle(request));
    },
  };
}
