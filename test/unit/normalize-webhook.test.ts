import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { DedupeBy } from '../../src/events/event-log.js';
import { normalizeWebhook, parseWebhookText, type NormalizeResult, type TransactionUpdateEvent } from '../../src/events/normalize.js';
import { transactionDigest } from '../../src/events/transaction-digest.js';

const meta = { receivedAt: '2025-01-02T03:04:05.000Z', madeId: 'gw_made' };
const line = { productId: 'p1', productName: 'Cola', productPrice: 1.5, productSku: 'C1', quantity: 2 };
const tx = { transactionId: 't1', status: 'completed', products: [line] };

function expectEvent(result: NormalizeResult): { event: TransactionUpdateEvent; dedupeBy: DedupeBy } {
  if (!result.ok) throw new Error(`expected ok, got problems: ${result.problems.join('; ')}`);
  return result;
}

function expectProblems(result: NormalizeResult): string[] {
  if (result.ok) throw new Error('expected problems, got an event');
  return result.problems;
}

describe.concurrent('normalizeWebhook', () => {
  it('reads the legacy form', () => {
    const body = { event: 'transaction', data: tx };
    const { event, dedupeBy } = expectEvent(normalizeWebhook(body, meta));
    expect(event).toMatchObject({
      type: 'transaction.update',
      format: 'LEGACY',
      receivedAt: meta.receivedAt,
      occurredAt: undefined,
      transactionId: 't1',
      status: 'completed',
      products: [line],
      transaction: tx,
    });
    expect(event.raw).toBe(body);
    // No id from the sender: one of the gateway's, and a redelivery is told by its content.
    expect(event.eventId).toBe('gw_made');
    expect(dedupeBy).toBe('content');
  });

  it.each([
    ['data', { type: 'transaction.update', data: tx }],
    ['data.object', { type: 'transaction.update', data: { object: tx, previous: { status: 'pending' } } }],
    ['data.transaction', { type: 'transaction.update', data: { transaction: tx } }],
  ])('reads the enveloped form with the transaction in %s', (_where, body) => {
    const { event } = expectEvent(normalizeWebhook(body, meta));
    expect(event).toMatchObject({ format: 'ENVELOPED', transactionId: 't1', status: 'completed', products: [line], transaction: tx });
  });

  it('prefers data.object over data.transaction over data', () => {
    const body = {
      type: 'transaction.update',
      data: { ...tx, transactionId: 'outer', object: { ...tx, transactionId: 'obj' }, transaction: { ...tx, transactionId: 'inner' } },
    };
    expect(expectEvent(normalizeWebhook(body, meta)).event.transactionId).toBe('obj');
  });

  it('keeps the envelope id and a string timestamp', () => {
    const body = { id: 'evt_1', type: 'transaction.update', timestamp: '2025-01-01T00:00:00Z', data: tx };
    const { event, dedupeBy } = expectEvent(normalizeWebhook(body, meta));
    expect(event.eventId).toBe('evt_1');
    expect(event.occurredAt).toBe('2025-01-01T00:00:00Z');
    expect(dedupeBy).toBe('id');
  });

  it.each([
    ['created_at', 1_735_689_600, '2025-01-01T00:00:00.000Z'],
    ['createdAt', 1_735_689_600_000, '2025-01-01T00:00:00.000Z'],
    ['time', '2025-01-01T00:00:00+01:00', '2025-01-01T00:00:00+01:00'],
  ])('reads the timestamp from %s (%s)', (field, value, iso) => {
    const body = { type: 'transaction.update', [field]: value, data: tx };
    expect(expectEvent(normalizeWebhook(body, meta)).event.occurredAt).toBe(iso);
  });

  it('lets the webhook-id header win for eventId, and dedupes by it', () => {
    const body = { id: 'evt_1', type: 'transaction.update', data: tx };
    const { event, dedupeBy } = expectEvent(normalizeWebhook(body, { ...meta, webhookId: 'wh_9' }));
    expect(event.eventId).toBe('wh_9');
    expect(dedupeBy).toBe('id');
  });

  it('digests the same transaction to the same content whatever the key order', () => {
    const a = { transactionId: 't1', status: 's', products: [{ productId: 'p', quantity: 1 }] };
    const b = { products: [{ quantity: 1, productId: 'p' }], status: 's', transactionId: 't1' };
    expect(transactionDigest(a)).toBe(transactionDigest(b));
    const canonical = '{"products":[{"productId":"p","quantity":1}],"status":"s","transactionId":"t1"}';
    expect(transactionDigest(a)).toBe(createHash('sha256').update(canonical).digest('hex'));
    expect(transactionDigest({ ...a, status: 'other' })).not.toBe(transactionDigest(a));
  });

  it('keeps fields it does not know, at every level', () => {
    const transaction = { ...tx, terminal: { id: 9 }, products: [{ ...line, batch: 'B7' }] };
    const body = { id: 'e', type: 'transaction.update', apiVersion: '2025-01', data: { object: transaction } };
    const { event } = expectEvent(normalizeWebhook(body, meta));
    expect(event.transaction).toEqual(transaction);
    expect(event.products).toEqual([{ ...line, batch: 'B7' }]);
    expect(event.raw).toEqual(body);
  });

  it('parses text and then normalises it', () => {
    const { event } = expectEvent(parseWebhookText(JSON.stringify({ event: 'transaction', data: tx }), meta));
    expect(event.transactionId).toBe('t1');
  });

  it('collects every problem, not just the first', () => {
    const body = { event: 'transaction', data: { transactionId: 5, products: [{ productPrice: '1' }] } };
    const problems = expectProblems(normalizeWebhook(body, meta));
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^data\.transactionId:/),
        expect.stringMatching(/^data\.products\.0\.productId:/),
        expect.stringMatching(/^data\.products\.0\.productPrice: expected number, received string$/),
        expect.stringMatching(/^data\.status:/),
      ]),
    );
    expect(problems).toHaveLength(4);
  });

  const env = (data: unknown, extra: Record<string, unknown> = {}) => ({ type: 'transaction.update', ...extra, data });
  const legacy = (data: unknown) => ({ event: 'transaction', data });

  it.each<[string, unknown, RegExp]>([
    ['not JSON', '{"event": "transaction",', /^body is not valid JSON$/],
    ['an array', '[1,2]', /^body must be a JSON object$/],
    ['a string', '"hello"', /^body must be a JSON object$/],
    ['null', 'null', /^body must be a JSON object$/],
    ['a number', '42', /^body must be a JSON object$/],
    ['an object without event or type', '{"data":{}}', /neither "type".*nor "event"/],
    [
      'a non-string event',
      JSON.stringify({ event: { name: 'transaction' }, data: tx }),
      /^event: expected a non-empty string such as "transaction", received object$/,
    ],
    [
      'an empty event',
      JSON.stringify({ event: '', data: tx }),
      /^event: expected a non-empty string such as "transaction", received an empty string$/,
    ],
    [
      'a non-string type',
      JSON.stringify({ type: 7, data: tx }),
      /^type: expected a non-empty string such as "transaction\.update", received number$/,
    ],
    ['a null type', JSON.stringify({ type: null, data: tx }), /^type: expected a non-empty string.*received null$/],
    ['legacy without data', JSON.stringify({ event: 'transaction' }), /^data: expected an object, received undefined$/],
    ['enveloped without data', JSON.stringify({ type: 'transaction.update' }), /^data: expected an object, received undefined$/],
    ['data not an object', JSON.stringify(legacy([tx])), /^data: expected an object, received array$/],
    [
      'a missing transactionId',
      JSON.stringify(legacy({ status: 's', products: [] })),
      /^data\.transactionId: expected string, received undefined$/,
    ],
    ['an empty transactionId', JSON.stringify(legacy({ ...tx, transactionId: '' })), /^data\.transactionId: must not be empty$/],
    [
      'a numeric transactionId',
      JSON.stringify(legacy({ ...tx, transactionId: 12 })),
      /^data\.transactionId: expected string, received number$/,
    ],
    [
      'a missing status',
      JSON.stringify(legacy({ transactionId: 't', products: [] })),
      /^data\.status: expected string, received undefined$/,
    ],
    ['products not an array', JSON.stringify(legacy({ ...tx, products: { p: 1 } })), /^data\.products: expected array, received object$/],
    ['a missing products', JSON.stringify(env({ object: { transactionId: 't', status: 's' } })), /^data\.object\.products: expected array/],
    [
      'a product line without productId',
      JSON.stringify(legacy({ ...tx, products: [line, { productName: 'x' }] })),
      /^data\.products\.1\.productId: expected string, received undefined$/,
    ],
    [
      'a productPrice as string',
      JSON.stringify(env({ transaction: { ...tx, products: [line, { ...line, productPrice: '1.50' }] } })),
      /^data\.transaction\.products\.1\.productPrice: expected number, received string$/,
    ],
    [
      'a product line that is not an object',
      JSON.stringify(legacy({ ...tx, products: ['p1'] })),
      /^data\.products\.0: expected object, received string$/,
    ],
    ['an envelope id that is an object', JSON.stringify(env(tx, { id: { v: 5 } })), /^id: expected a non-empty string, received object$/],
  ])('rejects %s', (_name, text, expected) => {
    const problems = expectProblems(parseWebhookText(text as string, meta));
    expect(problems).toEqual(expect.arrayContaining([expect.stringMatching(expected)]));
  });

  it.each<[string, unknown, { format: string; type: string }]>([
    [
      'an envelope of another type',
      { id: 'evt_1', type: 'vending.update', data: { vendingId: 'v1' } },
      { format: 'ENVELOPED', type: 'vending.update' },
    ],
    ['an envelope of another type without data', { type: 'order.created' }, { format: 'ENVELOPED', type: 'order.created' }],
    ['a type differing only in case', { type: 'Transaction.Update', data: tx }, { format: 'ENVELOPED', type: 'Transaction.Update' }],
    ['a legacy body of another event', { event: 'vending', data: { vendingId: 'v1' } }, { format: 'LEGACY', type: 'vending' }],
    ['a type that is any text', { type: 'a"b\n{c}', data: 5 }, { format: 'ENVELOPED', type: 'a"b\n{c}' }],
  ])('marks %s as ignored, with no problems and no event', (_name, body, ignored) => {
    const result = normalizeWebhook(body, meta);
    expect(result).toEqual({ ok: false, problems: [], ignored });
    expect(parseWebhookText(JSON.stringify(body), meta)).toEqual(result);
  });

  it('reads a numeric envelope id as text and leaves out a timestamp it cannot read', () => {
    const result = parseWebhookText(JSON.stringify(env(tx, { id: 5, timestamp: true })), meta);
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.event.eventId).toBe('5');
    expect(result.dedupeBy).toBe('id');
    expect(result.event.occurredAt).toBeUndefined();
  });
});
