import { randomBytes, randomUUID } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { pino } from 'pino';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LoggedEvent } from '../../src/events/event-log.js';
import type { SubscribeOptions } from '../../src/events/event-bus.js';
import type { TransactionUpdateEvent } from '../../src/events/normalize.js';
import { buildWebhookRequest, type WebhookForm, type WebhookRequest } from '../../src/events/webhook-request.js';
import { postGraphQL } from '../helpers/graphql-client.js';
import { startGateway, TEST_KEY } from '../helpers/gateway.js';
import { sseSubscribe } from '../helpers/sse-client.js';
import { waitFor } from '../helpers/wait-for.js';
import { jsonLines } from '../helpers/log-lines.js';

/*
 * POST /webhooks/{account} over real HTTP: each account's webhooks are taken
 * as POST /webhooks takes the default account's (both forms, signatures,
 * redeliveries), checked with the account's own secrets when it has some,
 * and published with the account's name, which bus subscribers see and
 * GraphQL does not show. "Nothing else published" is proven without sleeping:
 * a sentinel webhook is sent last, and once it arrives the events before it
 * must be exactly those expected.
 */

const newSecret = () => `whsec_${randomBytes(24).toString('base64')}`;
const uid = (prefix: string) => `${prefix}-${randomUUID()}`;
const txn = (status = 'completed') => ({
  transactionId: uid('tx'),
  status,
  products: [{ productId: 'p-1', productName: 'Cola', productPrice: 1.5, quantity: 2 }],
});
const without = (request: WebhookRequest, ...names: string[]): WebhookRequest => ({
  body: request.body,
  headers: Object.fromEntries(Object.entries(request.headers).filter(([name]) => !names.includes(name))),
});

interface LogLine {
  msg: string;
  webhook?: string;
  account?: string;
  detail?: string;
}

/** A gateway with a bus subscriber of every account, one per account named, and its log lines. */
async function accountsGateway(env: Record<string, string>, accounts: string[]) {
  const lines: LogLine[] = [];
  const sink = jsonLines<LogLine>((line) => lines.push(line));
  const running = await startGateway(env, { logger: pino({ level: 'info' }, sink) });
  const subscribers: Array<{ iterator: AsyncIterableIterator<LoggedEvent>; done: Promise<void> }> = [];
  const collect = async (options: SubscribeOptions) => {
    const iterator = await running.gateway.bus.subscribe(options);
    const events: TransactionUpdateEvent[] = [];
    const done = (async () => {
      for await (const logged of iterator) events.push(logged.event);
    })();
    subscribers.push({ iterator, done });
    return events;
  };
  const all = await collect({});
  const byAccount = new Map<string, TransactionUpdateEvent[]>();
  for (const account of accounts) byAccount.set(account, await collect({ account }));
  return {
    running,
    lines,
    all,
    byAccount,
    post: (path: string, request: WebhookRequest) =>
      fetch(`${running.url}${path}`, { method: 'POST', headers: request.headers, body: request.body }),
    async close() {
      for (const { iterator } of subscribers) await iterator.return?.();
      await Promise.all(subscribers.map(({ done }) => done));
      await running.close();
    },
  };
}

type Gateway = Awaited<ReturnType<typeof accountsGateway>>;

async function expectAccepted(response: Response): Promise<void> {
  expect({ status: response.status, body: await response.text() }).toEqual({ status: 200, body: '' });
}

async function expectError(response: Response, status: number, message: RegExp): Promise<void> {
  const text = await response.text();
  expect(response.status, text).toBe(status);
  expect(response.headers.get('content-type')).toMatch(/^application\/json\b/);
  expect(JSON.parse(text)).toStrictEqual({ errors: { message: expect.stringMatching(message) } });
}

/** Waits for the event of `transactionId` on the all-accounts subscriber. */
async function eventOf(gw: Gateway, transactionId: string): Promise<TransactionUpdateEvent> {
  expect(await waitFor(() => gw.all.some((e) => e.transactionId === transactionId), 2_000), transactionId).toBe(true);
  return gw.all.find((e) => e.transactionId === transactionId)!;
}

/**
 * Sends `send`'s webhooks, then a sentinel to the default path: what was published meanwhile must be exactly `expected` (by transaction id,
 * in order).
 */
async function expectPublishedExactly(
  gw: Gateway,
  sentinelRequest: (transaction: ReturnType<typeof txn>) => WebhookRequest,
  send: () => Promise<void>,
  expected: () => string[],
): Promise<void> {
  const from = gw.all.length;
  await send();
  const sentinel = txn('sentinel');
  await expectAccepted(await gw.post('/webhooks', sentinelRequest(sentinel)));
  await eventOf(gw, sentinel.transactionId);
  expect(gw.all.slice(from).map((e) => e.transactionId)).toEqual([...expected(), sentinel.transactionId]);
}

describe('webhooks per account, signed', () => {
  const DEFAULT = newSecret();
  const [A_OLD, A_NEW, B] = [newSecret(), newSecret(), newSecret()];
  let gw: Gateway;
  beforeAll(async () => {
    gw = await accountsGateway({ WEBHOOK_SECRET: `${DEFAULT},acct-a=${A_OLD}, acct-b=${B}, acct-a=${A_NEW}` }, ['acct-a', 'acct-b', '']);
  });
  afterAll(() => gw.close());
  const sentinel = (transaction: ReturnType<typeof txn>) => buildWebhookRequest({ form: 'legacy', transaction, secret: DEFAULT });

  it(
    "publishes each account's webhooks, both forms, signed with its secrets (old and new), " +
      "naming the account; the default path's name none",
    async () => {
      const sent: Array<[path: string, form: WebhookForm, secret: string, account: string | undefined]> = [
        ['/webhooks/acct-a', 'enveloped', A_OLD, 'acct-a'],
        ['/webhooks/acct-a', 'legacy', A_NEW, 'acct-a'],
        ['/webhooks/acct-b', 'legacy', B, 'acct-b'],
        ['/webhooks/acct-b', 'enveloped', B, 'acct-b'],
        // An account without secrets of its own is checked with WEBHOOK_SECRET.
        ['/webhooks/acct-c', 'enveloped', DEFAULT, 'acct-c'],
        ['/webhooks', 'enveloped', DEFAULT, undefined],
      ];
      for (const [path, form, secret, account] of sent) {
        const transaction = txn();
        const id = uid('msg');
        await expectAccepted(await gw.post(path, buildWebhookRequest({ form, transaction, secret, id })));
        const event = await eventOf(gw, transaction.transactionId);
        expect(event, path).toMatchObject({
          eventId: id,
          format: form === 'legacy' ? 'LEGACY' : 'ENVELOPED',
          status: 'completed',
          transactionId: transaction.transactionId,
        });
        expect(event.account, path).toBe(account);
        if (account === undefined) expect(Object.keys(event)).not.toContain('account');
      }
      expect(await waitFor(() => gw.byAccount.get('acct-a')!.length >= 2 && gw.byAccount.get('acct-b')!.length >= 2)).toBe(true);
      // A subscriber of one account gets its events only; the default account's gets those of POST /webhooks.
      for (const account of ['acct-a', 'acct-b']) expect(gw.byAccount.get(account)!.every((e) => e.account === account)).toBe(true);
      expect(gw.byAccount.get('')!.every((e) => e.account === undefined)).toBe(true);
    },
  );

  it("refuses, 401, a webhook unsigned or signed with anything but the account's own secrets", async () => {
    const enveloped = (secret: string | undefined) => buildWebhookRequest({ form: 'enveloped', transaction: txn(), secret });
    await expectPublishedExactly(
      gw,
      sentinel,
      async () => {
        const refused: Array<[path: string, request: WebhookRequest, message: RegExp]> = [
          ['/webhooks/acct-a', enveloped(undefined), /Missing webhook-id, webhook-timestamp, webhook-signature headers/],
          ['/webhooks/acct-a', without(enveloped(A_OLD), 'webhook-signature'), /Missing webhook-signature header/],
          ['/webhooks/acct-a', enveloped(B), /No matching signature/],
          // The default secret is not an account's own: an account with secrets of its own is checked with those alone.
          ['/webhooks/acct-a', enveloped(DEFAULT), /No matching signature/],
          ['/webhooks/acct-b', enveloped(A_NEW), /No matching signature/],
          ['/webhooks/acct-c', enveloped(B), /No matching signature/],
          ['/webhooks/acct-c', enveloped(undefined), /Missing webhook-id/],
          // Nor is an account's secret good for the default path.
          ['/webhooks', enveloped(A_OLD), /No matching signature/],
        ];
        for (const [path, request, message] of refused) await expectError(await gw.post(path, request), 401, message);
      },
      () => [],
    );
  });

  it('publishes the same event id from two accounts and the default one, and drops a redelivery within one account', async () => {
    const id = uid('msg');
    const [a, b, d] = [txn('paid'), txn('paid'), txn('paid')];
    await expectPublishedExactly(
      gw,
      sentinel,
      async () => {
        await expectAccepted(
          await gw.post('/webhooks/acct-a', buildWebhookRequest({ form: 'enveloped', transaction: a, secret: A_OLD, id })),
        );
        await expectAccepted(await gw.post('/webhooks/acct-b', buildWebhookRequest({ form: 'legacy', transaction: b, secret: B, id })));
        await expectAccepted(await gw.post('/webhooks', buildWebhookRequest({ form: 'enveloped', transaction: d, secret: DEFAULT, id })));
        // Redelivered to acct-a (signed anew, with the new secret): 200, nothing published.
        await expectAccepted(
          await gw.post('/webhooks/acct-a', buildWebhookRequest({ form: 'enveloped', transaction: a, secret: A_NEW, id })),
        );
        await expectAccepted(await gw.post('/webhooks/acct-b', buildWebhookRequest({ form: 'legacy', transaction: b, secret: B, id })));
      },
      () => [a.transactionId, b.transactionId, d.transactionId],
    );
    const published = gw.all.filter((e) => e.eventId === id);
    expect(published.map((e) => e.account)).toEqual(['acct-a', 'acct-b', undefined]);
  });

  it('answers 404 naming what is wrong, and publishes nothing, for a name no account can have', async () => {
    const cases: Array<[path: string, message: RegExp]> = [
      [
        '/webhooks/acct%20a',
        new RegExp(
          '^No webhooks path for account "acct a": an account name must be letters, digits, "\\.", "_" and "-", ' +
            'starting with a letter or digit$',
        ),
      ],
      ['/webhooks/-acct', /^No webhooks path for account "-acct": an account name must be letters/],
      ['/webhooks/.hidden', /^No webhooks path for account "\.hidden": an account name must be letters/],
      ['/webhooks/a%2Fb', /^No webhooks path for account "a\/b": an account name must be letters/],
      ['/webhooks/caf%C3%A9', /^No webhooks path for account "café": an account name must be letters/],
      // A long name is quoted in part only.
      [
        `/webhooks/${'a'.repeat(65)}`,
        new RegExp(`^No webhooks path for account "${'a'.repeat(64)}"…: an account name must be at most 64 characters$`),
      ],
      [`/webhooks/${'b'.repeat(5_000)}`, /^No webhooks path for account "b{64}"…: an account name must be at most 64 characters$/],
    ];
    await expectPublishedExactly(
      gw,
      sentinel,
      async () => {
        for (const [path, message] of cases) {
          // Well signed with the default secret: the name alone is refused.
          await expectError(
            await gw.post(path, buildWebhookRequest({ form: 'enveloped', transaction: txn(), secret: DEFAULT })),
            404,
            message,
          );
        }
        const empty = await gw.post('/webhooks/', buildWebhookRequest({ form: 'enveloped', transaction: txn(), secret: DEFAULT }));
        expect(empty.status).toBe(404);
        expect(Object.keys((await empty.json()) as object)).toEqual(['errors']);
        await expectError(
          await gw.post('/webhooks/acct-a/more', buildWebhookRequest({ form: 'enveloped', transaction: txn(), secret: A_OLD })),
          404,
          /^No route for POST \/webhooks\/acct-a\/more$/,
        );
      },
      () => [],
    );
  });

  it("answers another method on an account's path 405 with Allow: POST", async () => {
    const response = await fetch(`${gw.running.url}/webhooks/acct-a`, { method: 'GET' });
    expect(response.headers.get('allow')).toBe('POST');
    await expectError(response, 405, /GET.*POST/);
  });

  it("answers an account's unreadable body 400, a body too large once decoded 413 and an unknown coding 415, as on /webhooks", async () => {
    const body = JSON.stringify({ event: 'transaction', data: { status: 'x', products: [] } });
    await expectError(await gw.post('/webhooks/acct-a', signed(A_OLD, body)), 400, /data\.transactionId: expected string/);
    const bomb = new Uint8Array(gzipSync(Buffer.from('x'.repeat(2 * 1_048_576))));
    const tooLarge = await fetch(`${gw.running.url}/webhooks/acct-a`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      body: bomb,
    });
    await expectError(tooLarge, 413, /bytes/);
    const unknown = await fetch(`${gw.running.url}/webhooks/acct-a`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-encoding': 'zstd' },
      body,
    });
    expect(unknown.headers.get('accept-encoding')).toBe('gzip, deflate, br');
    await expectError(unknown, 415, /zstd/);
  });

  it("logs an account's webhook with its name, and counts it under the path's template, never the name", async () => {
    const transaction = txn();
    const id = uid('msg-logged');
    await expectAccepted(await gw.post('/webhooks/acct-b', buildWebhookRequest({ form: 'enveloped', transaction, secret: B, id })));
    await expectError(
      await gw.post('/webhooks/acct-b', buildWebhookRequest({ form: 'enveloped', transaction, secret: A_OLD })),
      401,
      /No matching signature/,
    );
    const defaultId = uid('msg-logged');
    await expectAccepted(
      await gw.post('/webhooks', buildWebhookRequest({ form: 'enveloped', transaction: txn(), secret: DEFAULT, id: defaultId })),
    );
    expect(await waitFor(() => gw.lines.some((line) => line.detail === defaultId))).toBe(true);
    expect(gw.lines.find((line) => line.msg === 'webhook' && line.detail === id)).toMatchObject({
      webhook: 'published',
      account: 'acct-b',
    });
    expect(gw.lines.some((line) => line.msg === 'webhook' && line.webhook === 'bad-signature' && line.account === 'acct-b')).toBe(true);
    const defaultLine = gw.lines.find((line) => line.msg === 'webhook' && line.detail === defaultId);
    expect(defaultLine).toMatchObject({ webhook: 'published' });
    expect(Object.keys(defaultLine!)).not.toContain('account');

    const metrics = await (await fetch(`${gw.running.url}/metrics`)).text();
    expect(metrics).toMatch(/vending_gateway_requests_total\{[^}]*operation="POST \/webhooks\/\{account\}"[^}]*\} [1-9]/);
    expect(metrics).not.toMatch(/acct-[abc]/);
  });

  it("shows GraphQL no account: the event type gains no field, and a subscriber gets the default account's event as before", async () => {
    const type = await postGraphQL<{ __type: { fields: Array<{ name: string }> } }>(
      gw.running.url,
      '{ __type(name: "TransactionUpdateEvent") { fields { name } } }',
      { key: TEST_KEY },
    );
    // No account among them (`currency` is the amounts' currency, the gateway's decision, not the sender's account).
    expect(type.body.data?.__type.fields.map((field) => field.name).sort()).toEqual([
      'currency',
      'eventId',
      'format',
      'occurredAt',
      'products',
      'raw',
      'receivedAt',
      'status',
      'transaction',
      'transactionId',
      'type',
    ]);
    const asked = await postGraphQL(gw.running.url, 'subscription { transactionUpdated { eventId account } }', { key: TEST_KEY });
    expect(asked.body.errors?.[0]?.message).toMatch(/Cannot query field "account"/);

    const before = gw.running.gateway.activeSubscriptions();
    const sse = await sseSubscribe(gw.running.url, 'subscription { transactionUpdated { eventId transactionId status raw } }', TEST_KEY);
    try {
      expect(sse.status).toBe(200);
      expect(await waitFor(() => gw.running.gateway.activeSubscriptions() > before)).toBe(true);
      const transaction = txn('sse');
      const id = uid('msg-sse');
      const request = buildWebhookRequest({ form: 'enveloped', transaction, secret: DEFAULT, id });
      await expectAccepted(await gw.post('/webhooks', request));
      let payload = await sse.next(5_000);
      while (payload.data.transactionUpdated.eventId !== id) payload = await sse.next(5_000);
      expect(payload.data.transactionUpdated).toEqual({
        eventId: id,
        transactionId: transaction.transactionId,
        status: 'sse',
        raw: JSON.parse(request.body),
      });
    } finally {
      sse.close();
    }
  });
});

describe('webhooks per account, without a secret alone in WEBHOOK_SECRET', () => {
  const A = newSecret();
  let gw: Gateway;
  beforeAll(async () => {
    gw = await accountsGateway({ WEBHOOK_SECRET: `acct-a=${A}` }, []);
  });
  afterAll(() => gw.close());
  const sentinel = (transaction: ReturnType<typeof txn>) => buildWebhookRequest({ form: 'legacy', transaction });

  it('still checks the accounts with secrets of their own, and takes the others unsigned as /webhooks does', async () => {
    const [c, a] = [txn(), txn()];
    await expectPublishedExactly(
      gw,
      sentinel,
      async () => {
        await expectError(
          await gw.post('/webhooks/acct-a', buildWebhookRequest({ form: 'legacy', transaction: txn() })),
          401,
          /Missing webhook-id/,
        );
        await expectAccepted(await gw.post('/webhooks/acct-c', buildWebhookRequest({ form: 'legacy', transaction: c })));
        await expectAccepted(await gw.post('/webhooks/acct-a', buildWebhookRequest({ form: 'legacy', transaction: a, secret: A })));
      },
      () => [c.transactionId, a.transactionId],
    );
    expect(gw.all.find((e) => e.transactionId === c.transactionId)?.account).toBe('acct-c');
  });

  it("tells a legacy redelivery (no id: the same content) among its own account's events", async () => {
    const transaction = txn('pending');
    const legacy = () => buildWebhookRequest({ form: 'legacy', transaction });
    await expectPublishedExactly(
      gw,
      sentinel,
      async () => {
        // The same transaction, the same content: once per account.
        for (const path of ['/webhooks/acct-c', '/webhooks/acct-d', '/webhooks', '/webhooks/acct-c', '/webhooks/acct-d', '/webhooks']) {
          await expectAccepted(await gw.post(path, legacy()));
        }
      },
      () => [transaction.transactionId, transaction.transactionId, transaction.transactionId],
    );
    const published = gw.all.filter((e) => e.transactionId === transaction.transactionId);
    expect(published.map((e) => e.account)).toEqual(['acct-c', 'acct-d', undefined]);
    expect(published.every((e) => /^gw_/.test(e.eventId))).toBe(true);
  });
});

/** Standard Webhooks headers for any body, signed by the library as the service signs. */
function signed(secret: string, body: string): WebhookRequest {
  const id = uid('msg');
  const at = new Date();
  const headers = { 'content-type': 'application/json', 'webhook-id': id, 'webhook-timestamp': String(Math.floor(at.getTime() / 1000)) };
  return { body, headers: { ...headers, 'webhook-signature': new Webhook(secret).sign(id, at, body) } };
}
