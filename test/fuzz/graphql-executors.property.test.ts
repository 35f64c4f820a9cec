import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayDeps } from '../../src/app/gateway.js';
import { OTHER_KEY, startForwardGateway, startGateway, TEST_KEY, tuneUpstream, type RunningGateway } from '../helpers/gateway.js';
import { startStandInUpstream, type Fault, type StandInUpstream } from '../helpers/stand-in-upstream.js';
import { jsonValue, runs, TRANSACTION_IDS } from '../property/arbitraries.js';
import { graphqlPayload } from '../property/graphql-documents.js';

/*
 * Compiled execution (src/graphql/use-compiled-execution.ts: graphql-jit) must
 * answer exactly as graphql-js's executor does, errors included: two gateways
 * over identical memory backends, one without compiled execution, get the
 * same random requests in the same order (GraphQL bodies, the headers clients
 * send, browsers' Origin among them, and payment mutations that change both
 * backends alike), each twice (interpreted, then compiled). Status, headers
 * (but the date, the request id and connection management) and body must
 * match. The same holds over a REST service of each gateway's own that fails
 * alike before each answer. Times and the event ids a memory backend makes
 * are masked: the history shows them, and two processes never read the clock
 * at the same millisecond.
 */

// Last-Modified is the second a result was held (the response cache): two processes hold it at different seconds.
const IGNORED_HEADERS = new Set(['date', 'x-request-id', 'connection', 'keep-alive', 'last-modified']);

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

async function answerOf(response: Response): Promise<Answer> {
  const headers: Record<string, string> = {};
  response.headers.forEach((value, key) => {
    if (!IGNORED_HEADERS.has(key)) headers[key] = value;
  });
  // Two processes read the clock at different milliseconds, and make their own event ids (the history of a payment update).
  const body = (await response.text())
    .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/g, '<time>')
    .replace(/(gw|evt)_[0-9a-f-]{36}/g, '<event id>')
    // A history cursor ("history:<ms>:<id>", base64url) carries a record's time.
    .replace(/aGlzdG9yeTo[\w-]*/g, '<cursor>');
  return { status: response.status, headers, body };
}

interface Sent {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string;
}

/** A header that is mostly one clients send (`usual`, or absent), sometimes any of `odd`. */
const header = (name: string, usual: Array<string | undefined>, odd: Array<string | undefined>) =>
  fc
    .oneof({ weight: 3, arbitrary: fc.constantFrom(...usual) }, { weight: 1, arbitrary: fc.constantFrom(...odd) })
    .map((value): Record<string, string> => (value === undefined ? {} : { [name]: value }));

const authorization = header('authorization', [TEST_KEY, `Bearer ${TEST_KEY}`, OTHER_KEY], [undefined, 'wrong-key', '', 'Bearer']);
const accept = header(
  'accept',
  [
    undefined,
    '*/*',
    'application/json',
    'application/json; charset=utf-8',
    'application/graphql-response+json',
    'application/graphql-response+json,application/json;q=0.9',
  ],
  [
    'text/event-stream',
    'application/json, text/event-stream',
    'text/html',
    'application/json; charset=latin1',
    'application/graphql-response+json, application/json',
  ],
);
const contentType = header(
  'content-type',
  ['application/json', 'application/json; charset=utf-8'],
  [
    undefined,
    'APPLICATION/JSON',
    'application/json;charset=utf-8',
    'application/graphql+json',
    'text/plain',
    'application/graphql',
    'application/json, text/plain',
  ],
);
// A browser's page sends its Origin with every POST; a server sends none.
const origin = fc.oneof(fc.constant({}), fc.constant({ origin: 'http://dashboard.example' }));

const PAYMENT =
  'mutation($id: ID!, $p: JSONObject!) { updateTransactionPayment(transactionId: $id, payment: $p) ' +
  '{ transaction { transactionId status } } }';
const paymentBody = fc
  .tuple(
    fc.constantFrom(...TRANSACTION_IDS, 'no-such-id'),
    fc.dictionary(fc.constantFrom('method', 'amount', 'reference'), jsonValue, { maxKeys: 3 }),
  )
  .map(([id, p]) => JSON.stringify({ query: PAYMENT, variables: { id, p } }));

const graphqlRequest: fc.Arbitrary<Sent> = fc
  .tuple(
    fc.oneof({ weight: 6, arbitrary: graphqlPayload }, { weight: 1, arbitrary: paymentBody }),
    authorization,
    accept,
    contentType,
    origin,
    fc.constantFrom('/graphql', '/graphql?x=1'),
  )
  .map(([body, auth, acc, type, from, path]) => ({ method: 'POST', path, headers: { ...auth, ...acc, ...type, ...from }, body }));

const manifest = JSON.parse(readFileSync(new URL('../../schema/persisted-documents.json', import.meta.url), 'utf8')) as Record<
  string,
  string
>;
/** The client operations that are queries. */
const clientQueries = Object.values(manifest).filter((text) => text.startsWith('query '));
const operationName = (text: string) => /^query (\w+)/.exec(text)![1]!;
/** How two answers to the same request must agree. */
type Compare = (answer: Answer, reference: Answer, label: string) => void;
const identical: Compare = (answer, reference, label) => expect(answer, label).toEqual(reference);

/**
 * Two gateways alike but for the fast paths `without` switches off; `same` sends a request to both (`times` over) and compares the answers.
 */
function pair(env: Record<string, string>, without: GatewayDeps['fastPaths'], compare: Compare, times: number) {
  let lane: RunningGateway;
  let yoga: RunningGateway;
  beforeAll(async () => {
    [lane, yoga] = await Promise.all([startGateway(env), startGateway(env, { fastPaths: without })]);
  });
  afterAll(async () => {
    await Promise.all([lane.close(), yoga.close()]);
  });

  return async function same(sent: Sent): Promise<void> {
    const send = (base: string) =>
      fetch(`${base}${sent.path}`, { method: sent.method, headers: sent.headers, body: sent.body, signal: AbortSignal.timeout(5_000) });
    for (let time = 1; time <= times; time += 1) {
      // One after the other: a mutation must change both backends before the next request.
      const fromLane = await answerOf(await send(lane.url));
      const fromYoga = await answerOf(await send(yoga.url));
      compare(
        fromLane,
        fromYoga,
        `${sent.method} ${sent.path} ${JSON.stringify(sent.headers)} ${sent.body?.slice(0, 300) ?? ''} (time ${time})`,
      );
    }
  };
}

/**
 * When a failed non-null field nulls the whole `data`, graphql-js reports the
 * errors it met until then and graphql-jit every field's: such an answer must
 * hold all of graphql-js's errors, with the same status. Anything else is
 * compared byte for byte.
 */
const sameOrMoreErrorsWhenDataIsNull: Compare = (answer, reference, label) => {
  const parsed = (of: Answer): { data?: unknown; errors?: unknown[] } | undefined => {
    const type = of.headers['content-type'] ?? '';
    if (type.startsWith('application/')) return JSON.parse(of.body) as { data?: unknown; errors?: unknown[] };
    // The result as one SSE `next` event's data.
    const data = type.startsWith('text/event-stream') ? /^event: next\ndata: (.*)$/m.exec(of.body)?.[1] : undefined;
    return data === undefined ? undefined : (JSON.parse(data) as { data?: unknown; errors?: unknown[] });
  };
  const [compiled, interpreted] = [parsed(answer), parsed(reference)];
  if (compiled?.data !== null || interpreted?.data !== null) return identical(answer, reference, label);
  expect(answer.status, label).toBe(reference.status);
  expect(compiled.errors, label).toEqual(expect.arrayContaining(interpreted.errors ?? []));
};

describe('compiled execution answers as graphql-js does', () => {
  // A document is compiled when it comes again: each is sent twice, interpreted then compiled.
  const same = pair({}, { compiledExecution: false }, sameOrMoreErrorsWhenDataIsNull, 2);

  it('GraphQL requests (documents, variables, payment mutations): same status, headers and body', async () => {
    await fc.assert(fc.asyncProperty(graphqlRequest, same), runs(500));
  }, 60_000);
});

describe('compiled execution answers as graphql-js does in front of a failing service', () => {
  const KEY = 'compiled-key';
  const sides: Array<{ upstream: StandInUpstream; gateway: RunningGateway }> = [];
  beforeAll(async () => {
    for (const compiledExecution of [true, false]) {
      const upstream = await startStandInUpstream({ keys: [KEY, OTHER_KEY] });
      // The service's verdicts on keys outlive the run: expiring on one side and not the other (a run past 30 s on a busy
      // machine), a key check would meet the fault there and the read here, and the two answers would differ for that alone.
      const gateway = await startForwardGateway(
        upstream.url,
        {},
        { fastPaths: { compiledExecution } },
        tuneUpstream({ keyCheck: { ttlMs: 3_600_000 } }),
      );
      sides.push({ upstream, gateway });
    }
  });
  afterAll(async () => {
    await Promise.all(sides.flatMap(({ upstream, gateway }) => [gateway.close(), upstream.close()]));
  });

  const FAULTS: Array<Fault | undefined> = [
    undefined,
    { kind: 'status', status: 500 },
    { kind: 'status', status: 404 },
    { kind: 'not-json' },
    { kind: 'wrong-shape' },
    { kind: 'reset' },
    { kind: 'status', status: 401 },
  ];
  const request = fc.record({
    query: fc.constantFrom(...clientQueries.filter((text) => !/recentTransactions|transactionStats|history/.test(text))),
    at: fc.nat(5),
    fault: fc.constantFrom(...FAULTS),
    key: fc.constantFrom(KEY, OTHER_KEY, 'unknown-key'),
    named: fc.boolean(),
  });

  it('reads with upstream faults, each sent three times (interpreted, then compiled): same status, headers and body', async () => {
    await fc.assert(
      fc.asyncProperty(request, async ({ query, at, fault, key, named }) => {
        const answers: Answer[][] = [];
        for (const { upstream, gateway } of sides) {
          const transaction = upstream.transactions[at % upstream.transactions.length] as { transactionId: string };
          const vending = upstream.vendings[at % upstream.vendings.length] as { vendingId: string };
          const id = /vending\(/.test(query) ? vending.vendingId : transaction.transactionId;
          const body = JSON.stringify({
            query,
            variables: { id, ids: [transaction.transactionId, 'no-such-id'] },
            operationName: named ? operationName(query) : undefined,
          });
          const mine: Answer[] = [];
          for (let time = 0; time < 3; time += 1) {
            upstream.clearFaults();
            if (fault) upstream.injectFault(fault, { times: 1 });
            const response = await fetch(`${gateway.url}/graphql`, {
              method: 'POST',
              headers: { 'content-type': 'application/json', authorization: key },
              body,
              signal: AbortSignal.timeout(5_000),
            });
            mine.push(await answerOf(response));
          }
          answers.push(mine);
        }
        const label = `${query.slice(0, 60)} ${JSON.stringify(fault)} ${key}`;
        for (const [time, answer] of answers[0]!.entries())
          sameOrMoreErrorsWhenDataIsNull(answer, answers[1]![time]!, `${label} (time ${time})`);
      }),
      runs(150),
    );
  }, 120_000);
});
