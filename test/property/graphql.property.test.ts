import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { answeringGateway, TEST_KEY, type RunningGateway } from '../helpers/gateway.js';
import { ERROR_CODES } from '../../src/errors.js';
import { describeExchange, isObject, jsonValue, leaksNothing, nestedJson, readAnswer, runs, TRANSACTION_IDS } from './arbitraries.js';
import { document, graphqlPayload as payload, name } from './graphql-documents.js';

/*
 * POST /graphql with random documents built from the schema's real names plus
 * noise (graphql-documents.ts), random variables, syntax garbage and deep
 * nesting. Whatever is sent: never a 5xx, a JSON body with `data` or
 * `errors`, and no error showing a stack trace, a source location, or the mask
 * of an unexpected failure ("Unexpected error.", which with the memory backend
 * can only come from a crash in the gateway).
 */

// ---------------------------------------------------------------------------

describe('POST /graphql with random documents', () => {
  let running: RunningGateway;
  beforeAll(async () => {
    running = await answeringGateway();
  });
  afterAll(() => running.close());

  async function check(body: string): Promise<void> {
    const headers = {
      'content-type': 'application/json',
      accept: 'application/graphql-response+json, application/json',
      authorization: TEST_KEY,
    };
    const answer = await readAnswer(await running.fetch(`${running.url}/graphql`, { method: 'POST', headers, body }));
    const what = describeExchange({ body }, answer);
    expect(answer.status, what).toBeLessThan(500);
    expect(isObject(answer.json), what).toBe(true);
    const json = answer.json as Record<string, unknown>;
    expect('data' in json || 'errors' in json, what).toBe(true);
    if (!('errors' in json)) return;
    expect(Array.isArray(json.errors), what).toBe(true);
    for (const error of json.errors as unknown[]) {
      const message = isObject(error) ? error.message : undefined;
      expect(typeof message, what).toBe('string');
      expect(leaksNothing(JSON.stringify(error)), what).toBe(true);
      expect(message, `a masked unexpected error: ${what}`).not.toBe('Unexpected error.');
      // Every code a client receives is one of the catalogue's (src/errors.ts), which the docs list.
      const code = isObject(error) && isObject(error.extensions) ? error.extensions.code : undefined;
      expect(ERROR_CODES, `a code outside the catalogue: ${what}`).toContain(code);
    }
  }

  const failing = (numRuns: number) => ({ ...runs(numRuns), endOnFailure: true });

  // Found by this property, fixed by bounding document nesting before parsing (kept first: it showed in a cold process).
  // graphql-armor's max-tokens parser (src/graphql/use-query-limits.ts, MAX_TOKENS=5000) recurses once per nesting
  // level: ~1900 nested list brackets (a 4 KB body) overflow the stack before the token limit, and the RangeError
  // is answered 500 "Unexpected error." Minimal: POST /graphql, authorization: test-key-1,
  //   {"query":"{ transaction(id: [[[…1900×… \"x\" …]]]) { status } }"}   (also `{a: ` ×1500, `a { ` ×2000)
  it('a list literal nested to near the token limit → no 5xx', async () => {
    const query = fc.integer({ min: 4_500, max: 4_900 }).map((n) => `{ transaction(id: ${'['.repeat(n)}"x"${']'.repeat(n)}) { status } }`);
    await fc.assert(
      fc.asyncProperty(query, (q) => check(JSON.stringify({ query: q }))),
      failing(3),
    );
  });

  it('never a 5xx; always JSON with data or errors; no error leaks a stack or hides a crash', async () => {
    await fc.assert(fc.asyncProperty(payload, check), runs(400));
  }, 60_000);

  // Found by this property (fixed): src/observability/metrics.ts operationLabel() calls `(name ?? '').replace(…)` on the request's
  // operationName, which yoga passes through unchecked from the JSON body; any truthy non-string is a TypeError,
  // answered 500 "Unexpected error." Minimal: POST /graphql, content-type: application/json, authorization: test-key-1,
  //   {"query":"{ __typename }","operationName":1}        (likewise true, {}, [])
  it('an operationName that is not a string → no 5xx', async () => {
    const operationName = fc.oneof(
      fc.integer({ min: 1 }),
      fc.constant(true),
      fc.array(jsonValue, { maxLength: 2 }),
      fc.dictionary(name, jsonValue, { maxKeys: 2 }),
    );
    await fc.assert(
      fc.asyncProperty(document, operationName, (query, op) => check(JSON.stringify({ query, operationName: op }))),
      failing(20),
    );
  });

  // Found by this property (fixed): the memory backend structuredClone()s the payment (src/backends/memory/memory-backend.ts,
  // updatePayment);
  // a JSONObject payment nested a few thousand levels overflows the stack, answered as a masked "Unexpected error."
  // Minimal: POST /graphql, authorization: test-key-1, {"query":"mutation($p: JSONObject!) { updateTransactionPayment(
  //   transactionId: \"<demo transaction id>\", payment: $p) { transaction { status } } }","variables":{"p":{"a":[[[…3000×…]]]}}}
  it('a deeply nested payment in updateTransactionPayment → no masked crash', async () => {
    const mutation =
      'mutation($id: ID!, $p: JSONObject!) { updateTransactionPayment(transactionId: $id, payment: $p) { transaction { status } } }';
    const request = fc.tuple(fc.constantFrom(...TRANSACTION_IDS), fc.integer({ min: 20_000, max: 30_000 }));
    await fc.assert(
      fc.asyncProperty(request, ([id, depth]) =>
        check(`{"query":${JSON.stringify(mutation)},"variables":{"id":${JSON.stringify(id)},"p":{"a":${nestedJson(depth)}}}}`),
      ),
      failing(3),
    );
  });
});
