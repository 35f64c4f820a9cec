import { createHmac } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventBus } from '../../src/events/event-bus.js';
import type { TransactionUpdateEvent } from '../../src/events/normalize.js';
import { buildWebhookRequest } from '../../src/events/webhook-request.js';
import { answeringGateway, type RunningGateway } from '../helpers/gateway.js';
import {
  anyText,
  describeExchange,
  envelopedBody,
  headerValue,
  isErrorEnvelope,
  isObject,
  jsonValue,
  leaksNothing,
  legacyBody,
  legacyOfSize,
  legacyWith,
  nestedJson,
  nestedJsonText,
  readAnswer,
  runs,
  transaction,
} from './arbitraries.js';

/*
 * POST /webhooks with random bodies and headers, against one gateway that
 * checks signatures and one that does not. Whatever arrives: never a 5xx, a
 * refusal is the JSON error envelope, and a refused webhook publishes nothing.
 * "Nothing" is proven per run without sleeping: a good sentinel webhook
 * follows each random one, and once the sentinel's event is on the bus, the
 * events collected since the random request are exactly what it published.
 */

const LIMIT = 64 * 1024;
const secretOf = (fill: number) => `whsec_${Buffer.alloc(24, fill).toString('base64')}`;
const SECRET = secretOf(7);
const OTHER_SECRET = secretOf(8);

// ---------------------------------------------------------------------------
// Generators.

const nearLimit = fc.integer({ min: LIMIT - 16, max: LIMIT + 16 });
const body: fc.Arbitrary<string | Uint8Array> = fc.oneof(
  { weight: 4, arbitrary: legacyBody.map((b) => JSON.stringify(b)) },
  { weight: 4, arbitrary: envelopedBody.map((b) => JSON.stringify(b)) },
  { weight: 2, arbitrary: jsonValue.map((v) => JSON.stringify(v)) },
  { weight: 1, arbitrary: anyText(200) },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 200 }) },
  { weight: 1, arbitrary: fc.tuple(transaction, nearLimit).map(([tx, size]) => legacyOfSize(tx, size)) },
  { weight: 1, arbitrary: fc.tuple(transaction, nestedJsonText).map(([tx, nested]) => legacyWith(tx, nested)) },
  { weight: 1, arbitrary: fc.tuple(nearLimit, fc.constantFrom('x', 'é', '"', '{', '\u0000')).map(([n, c]) => c.repeat(n)) },
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.constantFrom('\uFEFF', ' \n', '[', '}', 'null', '"'), legacyBody, fc.boolean())
      .map(([n, b, before]) => (before ? n + JSON.stringify(b) : JSON.stringify(b) + n)),
  },
);
const contentType = fc.oneof(
  fc.constantFrom(
    'application/json',
    'application/json; charset=utf-8',
    'APPLICATION/JSON',
    'text/plain',
    'application/x-www-form-urlencoded',
    'multipart/form-data; boundary=x',
    'application/json; charset=latin1',
    '',
  ),
  headerValue,
);
const v1Signature = fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => `v1,${Buffer.from(b).toString('base64')}`);
const headers = fc.record(
  {
    'content-type': contentType,
    'webhook-id': fc.oneof(
      fc.uuid().map((u) => `msg_${u}`),
      headerValue,
    ),
    'webhook-timestamp': fc.oneof(fc.integer({ min: 0, max: 4e9 }).map(String), headerValue),
    'webhook-signature': fc.oneof(
      v1Signature,
      fc.array(v1Signature, { maxLength: 3 }).map((s) => s.join(' ')),
      headerValue,
    ),
  },
  { requiredKeys: [] },
);
/** How the request is signed, at send time (timestamps must be fresh). `none` keeps the random headers. */
const SIGNING = ['none', 'valid', 'wrong-secret', 'tampered-body', 'stale', 'future', 'other-id'] as const;
type Signing = (typeof SIGNING)[number];
const signing = fc.oneof({ weight: 5, arbitrary: fc.constant<Signing>('valid') }, { weight: 6, arbitrary: fc.constantFrom(...SIGNING) });
const webhook = fc.record({ body, headers: headers.map((h) => h as Record<string, string>), signing });
type Webhook = { body: string | Uint8Array; headers: Record<string, string>; signing: Signing };

// ---------------------------------------------------------------------------
// Sending, signing, collecting.

let sequence = 0;
function toWire(request: Webhook) {
  const wire = Buffer.from(request.body);
  if (request.signing === 'none') return { wire, headers: request.headers };
  const id = `msg_property_${++sequence}`;
  const shift = { stale: -600, future: 600 }[request.signing as string] ?? 0;
  const timestamp = String(Math.floor(Date.now() / 1000) + shift);
  const key = Buffer.from((request.signing === 'wrong-secret' ? OTHER_SECRET : SECRET).slice('whsec_'.length), 'base64');
  const signed = wire.toString('utf8') + (request.signing === 'tampered-body' ? ' ' : '');
  const signature = createHmac('sha256', key).update(`${id}.${timestamp}.${signed}`).digest('base64');
  const sentId = request.signing === 'other-id' ? `${id}x` : id;
  return {
    wire,
    headers: { ...request.headers, 'webhook-id': sentId, 'webhook-timestamp': timestamp, 'webhook-signature': `v1,${signature}` },
  };
}

/** Every event published on the bus, gathered in the background (the technique of test/e2e/webhooks.test.ts). */
async function collectEvents(bus: EventBus) {
  const iterator = await bus.subscribe();
  const events: TransactionUpdateEvent[] = [];
  let wake: (() => void) | undefined;
  const loop = (async () => {
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) {
      events.push(next.value.event);
      wake?.();
    }
  })();
  return {
    events,
    async until(predicate: (event: TransactionUpdateEvent) => boolean, timeoutMs = 2_000) {
      const deadline = Date.now() + timeoutMs;
      while (!events.some(predicate)) {
        if (Date.now() > deadline) throw new Error('the sentinel webhook was not published');
        await new Promise<void>((resolve) => {
          wake = resolve;
          setTimeout(resolve, 50);
        });
      }
    },
    async stop() {
      await iterator.return?.();
      await loop;
    },
  };
}

type Target = { running: RunningGateway; collector: Awaited<ReturnType<typeof collectEvents>>; secret: string | undefined };

async function open(secret: string | undefined): Promise<Target> {
  const running = await answeringGateway({ MAX_BODY_BYTES: String(LIMIT), ...(secret ? { WEBHOOK_SECRET: secret } : {}) });
  return { running, collector: await collectEvents(running.gateway.bus), secret };
}

/** A JSON object whose `type` (or, without one, `event`) is a string other than the transaction update's. */
function aboutSomethingElse(wire: Buffer): boolean {
  let body: unknown;
  try {
    body = JSON.parse(wire.toString('utf8'));
  } catch {
    return false;
  }
  if (!isObject(body)) return false;
  const [name, expected] = 'type' in body ? [body.type, 'transaction.update'] : [body.event, 'transaction'];
  return typeof name === 'string' && name !== '' && name !== expected;
}

/**
 * Sends one webhook and then a sentinel; checks the answer and what was published in between. A webhook sent
 * with a signature carries a webhook-id of its own, so when accepted it must be published exactly once.
 */
/** `type/subtype`, each a token, whatever parameters follow: what Fastify reads as a media type (its content-type.js). */
const MEDIA_TYPE = /^\s*[\w!#$%&'*+.^`|~-]+\/[\w!#$%&'*+.^`|~-]+\s*(;[^]*)?$/;

async function exchange(target: Target, request: Webhook): Promise<void> {
  const { collector } = target;
  const before = collector.events.length;
  const { wire, headers: sent } = toWire(request);
  const answer = await readAnswer(
    await target.running.fetch(`${target.running.url}/webhooks`, { method: 'POST', headers: sent, body: wire }),
  );
  const what = describeExchange({ headers: sent, body: wire.toString('utf8') }, answer);

  const sentinel = { transactionId: `sentinel-${++sequence}`, status: 'sentinel', products: [] };
  const good = buildWebhookRequest({ form: 'legacy', transaction: sentinel, secret: target.secret });
  expect(
    (await target.running.fetch(`${target.running.url}/webhooks`, { method: 'POST', headers: good.headers, body: good.body })).status,
  ).toBe(200);
  await collector.until((event) => event.transactionId === sentinel.transactionId);
  const published = collector.events.slice(before).filter((event) => event.transactionId !== sentinel.transactionId);

  expect(answer.status, what).toBeLessThan(500);
  if (answer.status === 200) {
    expect(answer.text, what).toBe('');
    // A webhook of another type or event is acknowledged and publishes nothing.
    const expected = aboutSomethingElse(wire) ? 0 : request.signing === 'none' ? Math.min(published.length, 1) : 1;
    expect(published.length, what).toBe(expected);
    if (published[0]) expect(JSON.stringify(published[0].raw), what).toBe(JSON.stringify(JSON.parse(wire.toString('utf8'))));
  } else {
    expect(answer.contentType, what).toMatch(/^application\/json\b/);
    expect(isErrorEnvelope(answer.json), what).toBe(true);
    const message = isObject(answer.json) && isObject(answer.json.errors) ? String(answer.json.errors.message) : '';
    expect(leaksNothing(message), what).toBe(true);
    expect(
      published.map((event) => event.eventId),
      `published for a rejected webhook: ${what}`,
    ).toEqual([]);
  }
  // The contract sends application/json; a Content-Type that is no media type at all is refused before the body is read.
  const sentType = (sent as Record<string, string | undefined>)['content-type'];
  if (answer.status === 415) expect(sentType !== undefined && !MEDIA_TYPE.test(sentType), what).toBe(true);
  const signatureBad = target.secret !== undefined && request.signing !== 'valid';
  if (signatureBad) expect([401, 413, 415], what).toContain(answer.status);
  else expect(answer.status, what).not.toBe(401);
}

describe('POST /webhooks with random bodies and headers', () => {
  const targets: Target[] = [];
  beforeAll(async () => {
    targets.push(await open(undefined), await open(SECRET));
  });
  afterAll(async () => {
    for (const target of targets) {
      await target.collector.stop();
      await target.running.close();
    }
  });

  // Found by this property (fixed): src/events/normalize.ts contentHash() → sortKeys() recurses once per nesting level of the body; a
  // webhook with neither a webhook-id header nor an envelope id, nested a few thousand levels (here 20k–30k) in an
  // unknown field, overflows the stack and is answered 500 "Unexpected error." (a webhook must get 200 or 400).
  // Minimal: POST /webhooks, content-type: application/json, no signature headers (gateway without WEBHOOK_SECRET),
  //   {"event":"transaction","data":{"transactionId":"t-1","status":"x","products":[],"nested":[[[…5000×…]]]}}
  it('a valid webhook nested 20k–30k deep (deduplicated by content) → no 5xx, nothing published', async () => {
    const deep = fc.tuple(transaction, fc.integer({ min: 20_000, max: 30_000 })).map(([tx, depth]) => legacyWith(tx, nestedJson(depth)));
    const request = deep.map((body): Webhook => ({ body, headers: { 'content-type': 'application/json' }, signing: 'none' }));
    await fc.assert(
      fc.asyncProperty(request, (r) => exchange(targets[0]!, r)),
      { ...runs(3), endOnFailure: true },
    );
  });

  // Found by these properties, fixed by bounding JSON depth (src/contract/json-depth.ts): the same body WITH
  // a webhook-id header (or an envelope id, or signed) skips the content hash, is answered 200 and logged, and then the
  // memory backend's noteTransactionUpdate (src/backends/memory/memory-backend.ts, structuredClone, called from the bus
  // listener in src/server.ts) overflows inside the event log's setImmediate fan-out (src/events/event-log.ts): an
  // uncaught RangeError that ends the gateway process (`npm start` dies), and no subscriber gets the event. Minimal:
  //   POST /webhooks, content-type: application/json, webhook-id: msg_deep (no WEBHOOK_SECRET),
  //   {"event":"transaction","data":{"transactionId":"t-1","status":"x","products":[],"nested":[[[…10000×…]]]}}
  it('a valid webhook nested 10k deep with a webhook-id → refused with 400, nothing published, gateway still up', async () => {
    const deep = fc.tuple(transaction, fc.integer({ min: 10_000, max: 30_000 })).map(([tx, depth]) => legacyWith(tx, nestedJson(depth)));
    const request = deep.map((body): Webhook => ({ body, headers: { 'content-type': 'application/json' }, signing: 'valid' }));
    await fc.assert(
      fc.asyncProperty(request, (r) => exchange(targets[0]!, r)),
      runs(3),
    );
  });

  it('without WEBHOOK_SECRET: no 5xx, refusals are the error envelope and publish nothing', async () => {
    await fc.assert(
      fc.asyncProperty(webhook, (request) => exchange(targets[0]!, request)),
      runs(300),
    );
  }, 60_000);

  it('with WEBHOOK_SECRET: no 5xx, bad signatures are 401, refusals publish nothing', async () => {
    await fc.assert(
      fc.asyncProperty(webhook, (request) => exchange(targets[1]!, request)),
      runs(300),
    );
  }, 60_000);
});
