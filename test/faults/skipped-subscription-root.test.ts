import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, TEST_KEY, type RunningGateway } from '../helpers/gateway.js';
import { subscribe, wsClient } from '../helpers/ws-client.js';

/*
 * A subscription whose one root field is skipped (`@include(if: false)`,
 * `@skip(if: true)`, directly, by a variable or through a fragment) has
 * nothing to subscribe to: graphql-js threw "undefined is not iterable" and
 * every transport answered 500 "Unexpected error.". It is the client's error.
 */
let gw: RunningGateway;
beforeAll(async () => {
  gw = await startGateway();
});
afterAll(async () => {
  await gw.close();
});

const DOCUMENTS: Array<[string, string, Record<string, unknown>?]> = [
  ['@include(if: false)', 'subscription { transactionUpdated @include(if: false) { eventId } }'],
  ['@skip(if: true)', 'subscription { transactionUpdated @skip(if: true) { eventId } }'],
  ['@skip by a variable', 'subscription ($s: Boolean!) { transactionUpdated @skip(if: $s) { eventId } }', { s: true }],
  ['@include on an inline fragment', 'subscription { ... @include(if: false) { transactionUpdated { eventId } } }'],
  ['@skip in a fragment', 'subscription { ...F } fragment F on Subscription { transactionUpdated @skip(if: true) { eventId } }'],
];

describe.each(DOCUMENTS)('a subscription whose root field carries %s', (_name, query, variables) => {
  it.each(['text/event-stream', 'application/graphql-response+json', 'application/json'])(
    'is BAD_USER_INPUT over HTTP accepting %s',
    async (accept) => {
      const response = await fetch(`${gw.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept, authorization: TEST_KEY },
        body: JSON.stringify({ query, variables }),
        signal: AbortSignal.timeout(10_000),
      });
      expect(response.status).toBeLessThan(500);
      const text = await response.text();
      expect(text).not.toContain('Unexpected error.');
      expect(text).toContain('BAD_USER_INPUT');
      expect(text).toContain('@skip or @include');
    },
  );

  it('is BAD_USER_INPUT over graphql-ws', async () => {
    const client = wsClient(gw.url, TEST_KEY);
    try {
      // Refused before it starts: graphql-ws's error message, which ends the subscription with the errors.
      const errors = (await subscribe(client, query, variables).ended) as Array<{ message: string; extensions?: { code?: string } }>;
      expect(errors[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT' });
      expect(errors[0]?.message).toMatch(/@skip or @include/);
    } finally {
      await client.dispose();
    }
  });
});

it('still serves a subscription whose directives sit below its root field', async () => {
  const response = await fetch(`${gw.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream', authorization: TEST_KEY },
    body: JSON.stringify({ query: 'subscription { transactionUpdated { eventId status @skip(if: true) } }' }),
  });
  expect(response.status).toBe(200);
  await response.body?.cancel();
});
