import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { answeringGateway, TEST_KEY, type RunningGateway } from '../helpers/gateway.js';
import { postGraphQL } from '../helpers/graphql-client.js';
import { startStandInUpstream, type StandInUpstream } from '../helpers/stand-in-upstream.js';
import { jsonValue, runs, type JsonValue } from '../property/arbitraries.js';

/*
 * The tolerant reader under random drifts of the contract's shapes: the
 * service answers 200 with a transaction or a vending of which fields are
 * left out, sent as another JSON type, sent as numbers or booleans in text,
 * or joined by fields nobody named. REST passes each such answer through
 * byte for byte; GraphQL answers every field it can, and any error is ours
 * (UPSTREAM_ERROR, never masked) on a field the drift touched, never a
 * failure of the whole answer.
 */

const KEY = 'upstream-key';
let upstream: StandInUpstream;
let gateway: RunningGateway;

beforeAll(async () => {
  upstream = await startStandInUpstream({ keys: [KEY] });
  gateway = await answeringGateway({ BACKEND: 'rest', UPSTREAM_URL: upstream.url, UPSTREAM_API_KEY: KEY });
});
afterAll(async () => {
  await gateway.close();
  await upstream.close();
});

type Json = Record<string, JsonValue>;
const LINE_FIELDS = ['productId', 'productName', 'productPrice', 'productThumbnail', 'productSku', 'quantity'];
const TRANSACTION_FIELDS = ['transactionId', 'customerId', 'products', 'status'];
const VENDING_FIELDS = [
  'vendingId',
  'status',
  'online',
  'enabled',
  'address',
  'building',
  'countryCode',
  'currencyCode',
  'identifier',
  'posId',
  'products',
];

/** One drift of one field: left out, another JSON value, its value as text, or an unknown field beside it. */
const drift = (fields: string[]) =>
  fc.record({
    field: fc.constantFrom(...fields),
    change: fc.oneof(
      fc.constant({ kind: 'omit' as const }),
      jsonValue.map((value) => ({ kind: 'replace' as const, value })),
      fc.constant({ kind: 'as-text' as const }),
      fc.tuple(fc.string({ maxLength: 8 }), jsonValue).map(([name, value]) => ({ kind: 'add' as const, name: `x-${name}`, value })),
    ),
  });
type DriftOf = ReturnType<typeof drift> extends fc.Arbitrary<infer D> ? D : never;

function apply(object: Json, { field, change }: DriftOf): Json {
  const copy: Json = { ...object };
  if (change.kind === 'omit') delete copy[field];
  else if (change.kind === 'replace') copy[field] = change.value;
  else if (change.kind === 'as-text') copy[field] = JSON.stringify(copy[field] ?? null);
  else copy[change.name] = change.value;
  return copy;
}

const drifted = (base: Json, own: DriftOf[], lines: DriftOf[]): Json => {
  const changed = own.reduce(apply, base);
  const products = changed.products;
  if (!Array.isArray(products) || lines.length === 0 || products.length === 0) return changed;
  return {
    ...changed,
    products: products.map((line, i) =>
      i === 0 && typeof line === 'object' && line !== null && !Array.isArray(line) ? lines.reduce(apply, line) : line,
    ),
  };
};

let counter = 0;
const freshId = () => `drift-${++counter}`;

/** Serves `body` once for the next call to `pathPrefix`, as the service's 200. */
const answerOnce = (pathPrefix: string, body: string) =>
  upstream.injectFault({ kind: 'status', status: 200, body }, { method: 'GET', pathPrefix, times: 1 });

const restText = async (path: string) => {
  const response = await gateway.fetch(gateway.url + path, { headers: { authorization: TEST_KEY } });
  return { status: response.status, text: await response.text() };
};

/** GraphQL's answer holds data, and each error is ours and names a field. */
function expectServed(response: Awaited<ReturnType<typeof postGraphQL>>, root: string) {
  expect(response.status).toBe(200);
  expect(response.body.data).toBeTruthy();
  expect(Object.keys(response.body.data!)).toContain(root);
  for (const error of response.body.errors ?? []) {
    expect(error.message).not.toBe('Unexpected error.');
    expect(error.extensions?.code).toBe('UPSTREAM_ERROR');
    expect(error.path?.length ?? 0).toBeGreaterThan(1);
  }
}

const LINE_SELECTION = 'productId productName productPrice productThumbnail productSku quantity lineTotal extra';

describe('a service that drifts from the contract', () => {
  it('REST passes a drifted transaction through unchanged, GraphQL serves what it can', async () => {
    const base = upstream.transactions[0] as Json;
    await fc.assert(
      fc.asyncProperty(
        fc.array(drift(TRANSACTION_FIELDS), { minLength: 1, maxLength: 3 }),
        fc.array(drift(LINE_FIELDS), { maxLength: 3 }),
        async (own, lines) => {
          const body = JSON.stringify({ data: drifted(base, own, lines) });
          answerOnce('/transactions/', body);
          const rest = await restText(`/transactions/${freshId()}`);
          expect(rest).toEqual({ status: 200, text: body });

          answerOnce('/transactions/', body);
          const graphql = await postGraphQL(
            gateway,
            `{ transaction(id: "${freshId()}") { transactionId customerId status total extra products { ${LINE_SELECTION} } } }`,
          );
          expectServed(graphql, 'transaction');
        },
      ),
      runs(60),
    );
  });

  it('REST passes a drifted vending list through unchanged, GraphQL serves what it can', async () => {
    const base = upstream.vendings[0] as Json;
    await fc.assert(
      fc.asyncProperty(
        fc.array(drift(VENDING_FIELDS), { minLength: 1, maxLength: 3 }),
        fc.array(drift(LINE_FIELDS), { maxLength: 3 }),
        async (own, lines) => {
          const body = JSON.stringify({ data: [drifted(base, own, lines), upstream.vendings[1]] });
          answerOnce('/vendings', body);
          const rest = await restText('/vendings?products=flat');
          expect(rest).toEqual({ status: 200, text: body });

          answerOnce('/vendings', body);
          const fields =
            'vendingId status online enabled address building countryCode currencyCode identifier posId productCount extra ' +
            `products { ${LINE_SELECTION} }`;
          const graphql = await postGraphQL(gateway, `{ vendings { totalCount nodes { ${fields} } } }`);
          expectServed(graphql, 'vendings');
          // The vending the service did not touch is served whole.
          expect(graphql.body.data!.vendings.nodes.at(-1).vendingId).toBe(upstream.vendings[1]!.vendingId);

          const single = JSON.stringify({ data: drifted(base, own, lines) });
          answerOnce('/vendings/', single);
          expect(await restText(`/vendings/${freshId()}`)).toEqual({ status: 200, text: single });
        },
      ),
      runs(60),
    );
  });
});
