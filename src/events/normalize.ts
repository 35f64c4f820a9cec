import type { z } from 'zod';
import {
  idProblem,
  idTooLong,
  isJsonObject,
  textIdProblem,
  unaddableAmounts,
  unstorableText,
  jsonTooDeep,
  MAX_ID_BYTES,
  MAX_JSON_DEPTH,
  transactionSchema,
  type ProductLine,
} from '../contract/contract.js';
import type { DedupeBy } from './event-log.js';

/*
 * Webhook body → one normalised event (contract part 6). Pure: the
 * caller supplies the receive time and the `webhook-id` header, so the route
 * decides about I/O, answering and publishing, and this file only reads.
 */

export type WebhookFormat = 'LEGACY' | 'ENVELOPED';

export interface TransactionUpdateEvent {
  /** meta.webhookId, else the envelope `id`, else the id the gateway made (meta.madeId). */
  eventId: string;
  /**
   * The account whose path the webhook came in on (`POST /webhooks/{account}`);
   * absent for `POST /webhooks`, the default account (contract/accounts.ts).
   * Everything the gateway keeps of the event is that account's alone.
   */
  account?: string | undefined;
  /** `vending.update` only on the machines' own log (events/vending-events.ts), never on the transactions'. */
  type: 'transaction.update' | 'vending.update';
  format: WebhookFormat;
  /** ISO string given by the caller. */
  receivedAt: string;
  /** The envelope's timestamp when present (numbers become ISO strings). */
  occurredAt: string | undefined;
  transactionId: string;
  status: string;
  products: ProductLine[];
  /** The transaction object as received (unknown fields kept). */
  transaction: Record<string, unknown>;
  /**
   * The currency of its amounts (ISO 4217), decided by the gateway when it publishes the event
   * (src/events/event-currency.ts: the transaction's own field, its vending's, else DEFAULT_CURRENCY).
   */
  currency?: string | undefined;
  /** The whole parsed body. */
  raw: unknown;
  /**
   * With tracing on: the W3C trace context (`traceparent`, `tracestate`) of
   * the span that published the event, so each delivery, on any instance, is
   * linked to it. Never part of what subscribers receive.
   */
  traceContext?: Record<string, string> | undefined;
}

/**
 * A well-formed webhook about something else: an envelope whose `type`, or a
 * legacy body whose `event`, is another non-empty string. The sender is owed a
 * 200 (else it retries for days); nothing is published.
 */
export interface OtherWebhook {
  format: WebhookFormat;
  /** The envelope's `type` or the legacy `event`, as sent (unbounded: the caller bounds what it keeps). */
  type: string;
}

export type NormalizeResult =
  | { ok: true; event: TransactionUpdateEvent; dedupeBy: DedupeBy }
  | { ok: false; problems: string[]; ignored?: undefined }
  | { ok: false; problems: []; ignored: OtherWebhook };

export interface WebhookMeta {
  receivedAt: string;
  webhookId?: string | undefined;
  /**
   * The event id when the sender gave none (a legacy body): one of the
   * gateway's own, so every published event has an id no other shares and
   * `after` resumes exactly where it names.
   */
  madeId: string;
  /** The account whose path the webhook came in on; undefined for the default account's (`POST /webhooks`). */
  account?: string | undefined;
}

const LEGACY_EVENT = 'transaction';
// Ids taken from a sender (envelope id, webhook-id, transactionId) are remembered for a day
// to tell redeliveries apart: bounded as every id is (contract/ids.ts).
const tooLong = (what: string) => `${what}: longer than ${MAX_ID_BYTES} bytes`;
const ENVELOPED_TYPE = 'transaction.update';
/** Part 6 does not show the envelope's shape; these are the usual timestamp names. */
const TIMESTAMP_FIELDS = ['timestamp', 'created_at', 'createdAt', 'time'] as const;
/** Below this a numeric timestamp is read as seconds (1e11 s is year 5138; 1e11 ms is 1973). */
const SECONDS_LIMIT = 1e11;

interface Located {
  transaction: unknown;
  path: string;
}

interface Envelope {
  format: WebhookFormat;
  located: Located;
  id: string | undefined;
  occurredAt: string | undefined;
}

export function parseWebhookText(text: string, meta: WebhookMeta): NormalizeResult {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return { ok: false, problems: ['body is not valid JSON'] };
  }
  return normalizeWebhook(body, meta);
}

export function normalizeWebhook(body: unknown, meta: WebhookMeta): NormalizeResult {
  if (!isJsonObject(body)) return { ok: false, problems: ['body must be a JSON object'] };
  if (jsonTooDeep(body)) return { ok: false, problems: [`body nests deeper than ${MAX_JSON_DEPTH} levels`] };

  const problems: string[] = [];
  const envelope = readEnvelope(body, problems);
  if (envelope === undefined) return { ok: false, problems };
  if ('ignored' in envelope) return { ok: false, problems: [], ignored: envelope.ignored };

  const { transaction, path } = envelope.located;
  if (!isJsonObject(transaction)) {
    problems.push(`${path}: expected an object, received ${kindOf(transaction)}`);
    return { ok: false, problems };
  }
  // The contract's own schema, so the webhook accepts exactly what REST does
  // (part 2: product lines are shared by transactions, vendings and the webhook).
  const parsed = transactionSchema.safeParse(transaction);
  if (!parsed.success) problems.push(...parsed.error.issues.map((issue) => describeIssue(path, issue)));
  // The one id rule of every read and REST path: an id they refuse would make a transaction nobody can name.
  const idOf = typeof transaction.transactionId === 'string' ? idProblem(transaction.transactionId) : undefined;
  if (idOf !== undefined)
    problems.push(idTooLong(transaction.transactionId as string) ? tooLong(`${path}.transactionId`) : `${path}.transactionId: ${idOf}`);
  const webhookId = meta.webhookId !== undefined && meta.webhookId !== '' ? meta.webhookId : undefined;
  if (webhookId !== undefined && idTooLong(webhookId)) problems.push(tooLong('webhook-id header'));
  const amounts = parsed.success ? unaddableAmounts(parsed.data.products) : undefined;
  if (amounts !== undefined) problems.push(`${path}.${amounts}`);
  // The whole body: the history keeps what the contract does not show too.
  const text = unstorableText(body, '');
  if (text !== undefined) problems.push(text);
  if (!parsed.success || problems.length > 0) return { ok: false, problems };

  const senderId = webhookId ?? envelope.id;
  const event: TransactionUpdateEvent = {
    eventId: senderId ?? meta.madeId,
    type: ENVELOPED_TYPE,
    format: envelope.format,
    receivedAt: meta.receivedAt,
    occurredAt: envelope.occurredAt,
    transactionId: parsed.data.transactionId,
    status: parsed.data.status,
    products: parsed.data.products,
    transaction,
    raw: body,
  };
  // Only an account's event carries one: the default account's are as they were before accounts.
  if (meta.account !== undefined) event.account = meta.account;
  // Without an id, a redelivery is told by its content: the same as its transaction's last event.
  return { ok: true, dedupeBy: senderId === undefined ? 'content' : 'id', event };
}

/**
 * Which of the two forms (part 9) this is, and where its transaction sits; or,
 * for a `type` / `event` naming something else, which. Only a non-empty string
 * names anything: any other value is not a webhook of either form.
 */
function readEnvelope(body: Record<string, unknown>, problems: string[]): Envelope | { ignored: OtherWebhook } | undefined {
  if ('type' in body) {
    if (body.type !== ENVELOPED_TYPE) {
      if (typeof body.type === 'string' && body.type !== '') return { ignored: { format: 'ENVELOPED', type: body.type } };
      problems.push(`type: expected a non-empty string such as "${ENVELOPED_TYPE}", received ${describeValue(body.type)}`);
      return undefined;
    }
    const id = readId(body, problems);
    const occurredAt = readTimestamp(body);
    return { format: 'ENVELOPED', located: locateEnveloped(body.data), id, occurredAt };
  }
  if ('event' in body) {
    if (body.event !== LEGACY_EVENT) {
      if (typeof body.event === 'string' && body.event !== '') return { ignored: { format: 'LEGACY', type: body.event } };
      problems.push(`event: expected a non-empty string such as "${LEGACY_EVENT}", received ${describeValue(body.event)}`);
      return undefined;
    }
    return { format: 'LEGACY', located: { transaction: body.data, path: 'data' }, id: undefined, occurredAt: undefined };
  }
  problems.push('body has neither "type" (enveloped form) nor "event" (legacy form)');
  return undefined;
}

/**
 * The enveloped shape is "not shown" (part 6), so accept the common nestings:
 * `data.object`, then `data.transaction`, then `data` itself. When none holds a
 * transaction, `data` is validated so the problems point at it.
 */
function locateEnveloped(data: unknown): Located {
  if (isJsonObject(data)) {
    if (isJsonObject(data.object)) return { transaction: data.object, path: 'data.object' };
    if (isJsonObject(data.transaction)) return { transaction: data.transaction, path: 'data.transaction' };
  }
  return { transaction: data, path: 'data' };
}

function readId(body: Record<string, unknown>, problems: string[]): string | undefined {
  const { id } = body;
  // An empty id names nothing: the event is told apart by its content, as one without an id.
  if (id === undefined || id === null || id === '') return undefined;
  if (typeof id === 'string') {
    // Not text (a lone surrogate): it could be neither stored as it came nor named again in `after`.
    const problem = idTooLong(id) ? tooLong('id') : id.trim() === '' ? undefined : textIdProblem(id) && `id: ${textIdProblem(id)}`;
    if (problem === undefined) return id;
    problems.push(problem);
    return undefined;
  }
  if (typeof id === 'number' && Number.isFinite(id)) return String(id);
  // A wrong id would silently fall back to content dedupe; say so instead.
  problems.push(`id: expected a non-empty string, received ${kindOf(id)}`);
  return undefined;
}

/**
 * The envelope's time is informative only, so a value that cannot be read is
 * left out rather than making the sender retry a webhook the gateway can use.
 */
function readTimestamp(body: Record<string, unknown>): string | undefined {
  for (const field of TIMESTAMP_FIELDS) {
    const value = body[field];
    if (value === undefined || value === null) continue;
    if (typeof value === 'string' && value !== '') return value;
    if (typeof value === 'number' && Number.isFinite(value)) {
      const date = new Date(value < SECONDS_LIMIT ? value * 1000 : value);
      if (!Number.isNaN(date.getTime())) return date.toISOString();
    }
    return undefined;
  }
  return undefined;
}

/** Zod says "Invalid input: expected …"; the path already says where, so keep the useful part. */
function describeIssue(prefix: string, issue: z.core.$ZodIssue): string {
  const path = [prefix, ...issue.path.map(String)].join('.');
  return `${path}: ${issue.message.replace(/^Invalid input: /, '')}`;
}

/** The empty string shown as such; any other value by its kind, so no sender text is echoed. */
function describeValue(value: unknown): string {
  return value === '' ? 'an empty string' : kindOf(value);
}

function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}
