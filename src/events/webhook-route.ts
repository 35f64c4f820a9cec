import { randomUUID } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { accountProblem, DEFAULT_ACCOUNT } from '../contract/contract.js';
import { errorEnvelope } from '../errors.js';
import { refusalMessage } from '../refusals/transport-refusals.js';
import { ACCEPTED_ENCODINGS, BodyTooLarge, decodeBodyText, UndecodableBody, UnsupportedEncoding } from '../http/decode-body.js';
import type { Route } from '../http/front-door.js';
import type { DedupeBy } from './event-log.js';
import { parseWebhookText, type TransactionUpdateEvent } from './normalize.js';
import type { WebhookVerifier } from './webhook-verifier.js';
import { context, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { traceHeaders, type Tracing } from '../tracing/tracing.js';

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
  /** The default account's path; each account's is `<path>/{account}`. @default '/webhooks' */
  path?: string;
  /** Largest decoded body (the front door bounds the bytes received). */
  maxBodyBytes: number;
  /**
   * Checks Standard Webhooks signatures on `path`, and on the path of every account not in `accountVerifiers`; without one those bodies are
   * accepted unsigned.
   */
  verifier: WebhookVerifier | undefined;
  /** Accounts that sign with secrets of their own: their path's webhooks are checked by theirs alone. */
  accountVerifiers?: ReadonlyMap<string, WebhookVerifier> | undefined;
  /**
   * Takes the event into the event log unless it is a redelivery (resolving
   * `false`); the webhook is answered 200 once this resolves, and 503 (so the
   * sender retries) when it rejects.
   */
  publish(event: TransactionUpdateEvent, dedupeBy: DedupeBy): Promise<boolean>;
  /**
   * Told of every webhook's outcome, for logs and metrics; the detail of `ignored` is the sender's type, unbounded.
   * `account` is the path's (`DEFAULT_ACCOUNT` for `path` itself): a name of many, never a metric's label.
   */
  onOutcome?(outcome: WebhookOutcome, detail: string | undefined, account: string): void;
  /**
   * False once subscriptions are being ended for shutdown, or while the
   * history's feed holds all it may: a webhook is then answered 503, so its
   * sender retries (elsewhere, or later), rather than 200 for an event no
   * subscriber would get or the history would drop. @default () => true
   */
  accepting?(): boolean;
  /** With tracing on: spans for the signature check and the publication, whose context the event carries to its deliveries. @default off */
  tracing?: Tracing | undefined;
}

type Report = (outcome: WebhookOutcome, detail?: string) => void;

/** Retry-After of a 503: the event store is away, the sender should come back soon. */
const RETRY_AFTER_SECONDS = '5';

/** The longest piece of a sender's type passed on in an outcome's detail. */
const MAX_TYPE_DETAIL = 100;

/**
 * `POST /webhooks` (the default account's) and `POST /webhooks/{account}`
 * (each account's), one handler with the account as its parameter: decode →
 * verify → read → dedupe and log → answer 200 with an empty body. The answer
 * waits for the event to be logged, never for subscribers: they are fed from
 * the log afterwards. A webhook of another type is answered 200 as soon as its
 * signature holds, and goes no further. An account's event carries its name
 * (`TransactionUpdateEvent.account`) and is told from a redelivery among that
 * account's events alone.
 */
export function webhookRoutes(options: WebhookRouteOptions): Route[] {
  const path = options.path ?? '/webhooks';
  type Answer = { status: number; body?: unknown; headers?: Record<string, string> };

  async function handle(request: FastifyRequest, account: string): Promise<Answer> {
    const report = (outcome: WebhookOutcome, detail?: string) => options.onOutcome?.(outcome, detail, account);
    const text = await readBody(request, report);
    if (typeof text !== 'string') return text;
    const header = (name: string) => {
      const value = request.headers[name];
      return typeof value === 'string' ? value : undefined;
    };
    const verifier = account === DEFAULT_ACCOUNT ? options.verifier : (options.accountVerifiers?.get(account) ?? options.verifier);
    const verification = verifier && verify(verifier, text, header);
    if (verification && !verification.ok) {
      report('bad-signature', verification.reason);
      return { status: 401, body: errorEnvelope(refusalMessage.webhookSignatureRejected(verification.reason)) };
    }
    const result = parseWebhookText(text, {
      receivedAt: new Date().toISOString(),
      webhookId: header('webhook-id'),
      madeId: `gw_${randomUUID()}`,
      account: account === DEFAULT_ACCOUNT ? undefined : account,
    });
    if (!result.ok && result.ignored) {
      report('ignored', result.ignored.type.slice(0, MAX_TYPE_DETAIL));
      return { status: 200 };
    }
    if (!result.ok) {
      const message = refusalMessage.webhookBodyRejected(result.problems);
      report('unreadable', message);
      return { status: 400, body: errorEnvelope(message) };
    }
    if (options.accepting && !options.accepting())
      return unavailable(report, new Error('not taking events now (stopping, or the history is as far behind as it may be)'));
    let published: boolean;
    try {
      published = await (options.tracing
        ? publishTraced(options.tracing, result.event, result.dedupeBy)
        : options.publish(result.event, result.dedupeBy));
    } catch (error) {
      // Deciding and appending are one step: either nothing was remembered, so the sender's retry gets through,
      // or (a command that timed out but that Redis ran later) the event was logged whole, and the retry is a redelivery.
      return unavailable(report, error);
    }
    report(published ? 'published' : 'duplicate', result.event.eventId);
    return { status: 200 };
  }

  function verify(verifier: WebhookVerifier, text: string, header: (name: string) => string | undefined) {
    if (!options.tracing) return verifier.verify(text, header);
    const span = options.tracing.tracer.startSpan('webhook verify');
    const verification = verifier.verify(text, header);
    if (!verification.ok) span.setStatus({ code: SpanStatusCode.ERROR, message: verification.reason });
    span.end();
    return verification;
  }

  /**
   * The publication as a producer span (dedupe and append are one step of the
   * event log); the event carries its context, through Redis too, to every
   * delivery it causes.
   */
  async function publishTraced(tracing: Tracing, event: TransactionUpdateEvent, dedupeBy: DedupeBy): Promise<boolean> {
    const span = tracing.tracer.startSpan('publish transaction.update', {
      kind: SpanKind.PRODUCER,
      attributes: { 'messaging.operation.type': 'send', 'messaging.message.id': event.eventId, 'vending_gateway.dedupe_by': dedupeBy },
    });
    if (event.account !== undefined) span.setAttribute('vending_gateway.account', event.account);
    try {
      const published = await options.publish({ ...event, traceContext: traceHeaders(trace.setSpan(context.active(), span)) }, dedupeBy);
      span.setAttribute('vending_gateway.webhook.outcome', published ? 'published' : 'duplicate');
      return published;
    } catch (error) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
      throw error;
    } finally {
      span.end();
    }
  }

  /** The decoded body, or the answer when there is none to read (413, 415, 400). */
  async function readBody(request: FastifyRequest, report: Report): Promise<string | Answer> {
    const bytes = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
    const encoding = request.headers['content-encoding'];
    try {
      return await decodeBodyText(bytes, typeof encoding === 'string' ? encoding : undefined, options.maxBodyBytes);
    } catch (error) {
      if (error instanceof BodyTooLarge) {
        report('too-large');
        return { status: 413, body: errorEnvelope(error.message) };
      }
      if (error instanceof UnsupportedEncoding) {
        report('unsupported-encoding', error.message);
        return { status: 415, body: errorEnvelope(error.message), headers: { 'accept-encoding': ACCEPTED_ENCODINGS } };
      }
      if (error instanceof UndecodableBody) {
        report('unreadable', error.message);
        return { status: 400, body: errorEnvelope(error.message) };
      }
      throw error;
    }
  }

  function unavailable(report: Report, error: unknown): Answer {
    report('unavailable', error instanceof Error ? error.message : String(error));
    return {
      status: 503,
      body: errorEnvelope(refusalMessage.webhookEventsUnavailable()),
      headers: { 'retry-after': RETRY_AFTER_SECONDS },
    };
  }

  function send(reply: FastifyReply, { status, body, headers }: Answer) {
    reply.code(status).headers(headers ?? {});
    // The contract: "answer with HTTP 200 OK. The response body is empty."
    return body === undefined ? reply.send() : reply.send(body);
  }

  return [
    {
      method: 'POST',
      url: path,
      envelope: 'rest',
      transport: 'webhook',
      operation: `POST ${path}`,
      handler: async (request: FastifyRequest, reply: FastifyReply) => send(reply, await handle(request, DEFAULT_ACCOUNT)),
    },
    {
      method: 'POST',
      url: `${path}/:account`,
      envelope: 'rest',
      transport: 'webhook',
      // The template, not the name: one series for every account.
      operation: `POST ${path}/{account}`,
      async handler(request: FastifyRequest, reply: FastifyReply) {
        const { account } = request.params as { account: string };
        const problem = accountProblem(account);
        // No such path for a name no account can have: nothing of the body is looked at.
        if (problem !== undefined)
          return send(reply, {
            status: 404,
            body: errorEnvelope(refusalMessage.noWebhooksPath(account, problem)),
          });
        return send(reply, await handle(request, account));
      },
    },
  ];
}
