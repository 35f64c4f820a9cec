import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayDeps } from '../../src/app/gateway.js';
import type { Config } from '../../src/config/config.js';
import { OPERATION_RULES, type OperationRuleName } from '../../src/graphql/operation-rules.js';
import { demoBackend, startGateway, TEST_KEY, type RunningGateway } from '../helpers/gateway.js';
import { startOtlpReceiver, type OtlpReceiver } from '../helpers/otlp-receiver.js';
import { waitFor } from '../helpers/wait-for.js';
import { wsClient } from '../helpers/ws-client.js';
import { readMultipart } from '../helpers/multipart.js';

/*
 * One pipeline on every transport and request shape: each rule of the list
 * the yoga instance is built from (src/graphql/operation-rules.ts) is tried
 * with an example of its own on HTTP POST as a server sends it, the same POST
 * as a browser's page sends it (its Origin, Apollo Client's Accept), GET, SSE,
 * graphql-ws, HTTP multipart as Apollo Client's HttpLink asks for it, and
 * Apollo's persisted query link (the hash first, the text when the hash is
 * unknown), each three times in a row, after the same document was
 * accepted three times where the rule depends on the request (`primer`): a
 * route that remembered the document and skipped the rule would answer the
 * second or third send otherwise. `CASES` must name every rule (the type says
 * so, and the loop below fails on a rule without a case), so a rule added to
 * the list fails here until it holds on every shape.
 */

type Transport = 'http' | 'browser' | 'get' | 'sse' | 'ws' | 'multipart' | 'apq';
const TRANSPORTS: readonly Transport[] = ['http', 'browser', 'get', 'sse', 'ws', 'multipart', 'apq'];
/** Each refusal is sent this often on each transport, and each primer too. */
const SENDS = 3;

interface Operation {
  query: string;
  variables?: Record<string, unknown>;
  extensions?: Record<string, unknown>;
  operationName?: string;
}

interface Answer {
  data?: unknown;
  errors?: Array<{ message: string; extensions?: { code?: string } }>;
}

interface Gateway {
  url: string;
  run(transport: Transport, operation: Operation, key?: string): Promise<Answer>;
  metrics(): Promise<string>;
}

interface Refusal {
  /** What the example is, when its message does not say it. */
  name?: string;
  operation: Operation;
  key?: string;
  code: string;
  message: RegExp;
  /** The same document as a request the rule accepts, sent (and answered without errors) first. */
  primer?: { operation: Operation; key?: string };
}

interface Case {
  env?: (context: { otlp: OtlpReceiver }) => Record<string, string>;
  deps?: () => GatewayDeps;
  /** Values no variable sets (startGateway's `tune`). */
  tune?: (config: Config) => Config;
  /** Refused with this code and message on every transport, in the same words. */
  refusals?: Refusal[];
  /** Anything else the rule does, checked after an operation over `transport`. */
  holds?: (gateway: Gateway, transport: Transport, context: { otlp: OtlpReceiver }) => Promise<void>;
}

const manifest = JSON.parse(readFileSync(new URL('../../schema/persisted-documents.json', import.meta.url), 'utf8')) as Record<
  string,
  string
>;
const fleetHash = Object.entries(manifest).find(([, text]) => text.startsWith('query FleetOverview'))![0];
const persisted = (hash: string) => ({ persistedQuery: { version: 1, sha256Hash: hash } });
const nestedJson = (depth: number): unknown => (depth === 0 ? 1 : { a: nestedJson(depth - 1) });
const READ_ONLY_KEY = 'pipeline-subscribe-only';
const SECRET = 'db password is hunter2';

/** How often an operation of this name was counted, over every transport. */
function counted(text: string, operation: string): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith('vending_gateway_requests_total{') && line.includes(`operation="${operation}"`))
      sum += Number(line.split(' ').pop());
  }
  return sum;
}

const CASES: Record<OperationRuleName, Case> = {
  metrics: {
    holds: async (gateway, transport) => {
      const name = `Counted${transport}`;
      expect(counted(await gateway.metrics(), name)).toBe(0);
      const answer = await gateway.run(transport, { query: `query ${name} { vendings { totalCount } }` });
      expect(answer.errors).toBeUndefined();
      // The front door counts an HTTP answer once written: wait for the count instead of racing it.
      let count = 0;
      for (let tries = 0; tries < 100 && count === 0; tries += 1) {
        count = counted(await gateway.metrics(), name);
        if (count === 0) await new Promise((resolve) => setTimeout(resolve, 20));
      }
      expect(count).toBe(1);
    },
  },
  permissions: {
    env: () => ({ API_KEYS: `${TEST_KEY},${READ_ONLY_KEY}:subscribe` }),
    refusals: [
      {
        operation: { query: '{ vendings { totalCount } }' },
        key: READ_ONLY_KEY,
        code: 'FORBIDDEN',
        message: /read/,
        primer: { operation: { query: '{ vendings { totalCount } }' } },
      },
    ],
  },
  'document-nesting': {
    refusals: [
      {
        operation: { query: '{ vendings { totalCount } }', variables: { deep: nestedJson(100) } },
        code: 'BAD_USER_INPUT',
        message: /nest at most/,
        primer: { operation: { query: '{ vendings { totalCount } }', variables: { deep: nestedJson(3) } } },
      },
      {
        operation: { query: `{ vendings { totalCount } ${'@skip(if: [['.repeat(150)}${']]'.repeat(150)}) }` },
        code: 'BAD_USER_INPUT',
        message: /nests deeper/,
      },
    ],
  },
  'subscription-root': {
    refusals: [
      {
        operation: { query: 'subscription { transactionUpdated @include(if: false) { eventId } }' },
        code: 'BAD_USER_INPUT',
        message: /@skip or @include/,
      },
      {
        operation: { query: 'subscription S { ...F } fragment F on Subscription { transactionUpdated @skip(if: true) { eventId } }' },
        code: 'BAD_USER_INPUT',
        message: /@skip or @include/,
      },
    ],
  },
  'query-limits': {
    refusals: [
      {
        operation: { query: `{ ${'vendings { nodes { '.repeat(25)}vendingId${' } }'.repeat(25)} }` },
        code: 'BAD_USER_INPUT',
        message: /depth/i,
      },
      {
        operation: { query: `{ ${Array.from({ length: 100 }, (_, i) => `a${i}: vendings { totalCount }`).join(' ')} }` },
        code: 'BAD_USER_INPUT',
        message: /alias/i,
      },
      {
        operation: { query: `{ vendings @include(if: true) { totalCount ${'@skip(if: false) '.repeat(60)} } }` },
        code: 'BAD_USER_INPUT',
        message: /directive/i,
      },
    ],
  },
  'max-cost': {
    env: () => ({ MAX_COST: '50' }),
    refusals: [
      {
        operation: {
          query: 'query Many($ids: [ID!]!) { transactions(ids: $ids) { status } }',
          variables: { ids: Array.from({ length: 100 }, (_, i) => `tx-${i}`) },
        },
        code: 'BAD_USER_INPUT',
        message: /MAX_COST/,
        primer: { operation: { query: 'query Many($ids: [ID!]!) { transactions(ids: $ids) { status } }', variables: { ids: ['tx-1'] } } },
      },
    ],
  },
  introspection: {
    env: () => ({ INTROSPECTION: 'off' }),
    refusals: [{ operation: { query: '{ __schema { queryType { name } } }' }, code: 'BAD_USER_INPUT', message: /introspection/i }],
  },
  'error-codes': {
    env: () => ({ INTROSPECTION: 'off' }),
    refusals: [
      {
        operation: { query: '{ vending(id: "x") { vendingI } }' },
        code: 'BAD_USER_INPUT',
        message: /^Cannot query field "vendingI" on type "Vending"\.$/,
      },
    ],
  },
  'trusted-documents': {
    env: () => ({ TRUSTED_DOCUMENTS: 'only' }),
    refusals: [
      { operation: { query: '{ vendings { totalCount } }' }, code: 'PERSISTED_QUERY_ONLY', message: /trusted/ },
      {
        operation: { query: '', extensions: persisted('f'.repeat(64)) },
        code: 'PERSISTED_QUERY_NOT_FOUND',
        message: /Unknown trusted document/,
      },
      // A text of its own alongside a trusted hash is still a text of its own.
      {
        name: 'a text alongside a trusted hash',
        operation: { query: '{ vendings { totalCount } }', extensions: persisted(fleetHash) },
        code: 'PERSISTED_QUERY_ONLY',
        message: /trusted/,
      },
    ],
    holds: async (gateway, transport) => {
      const answer = await gateway.run(transport, { query: '', extensions: persisted(fleetHash), variables: { first: 1 } });
      expect(answer.errors).toBeUndefined();
      expect((answer.data as { vendings: { nodes: unknown[] } }).vendings.nodes).toHaveLength(1);
    },
  },
  tracing: {
    env: ({ otlp }) => ({ OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url }),
    // Spans exported at once, not after the SDK's 5 s.
    tune: (config) => ({ ...config, tracing: config.tracing && { ...config.tracing, exportDelayMs: 20 } }),
    holds: async (gateway, transport, { otlp }) => {
      const name = `Traced${transport}`;
      await gateway.run(transport, { query: `query ${name} { vendings { totalCount } }` });
      expect(await waitFor(() => otlp.spans.some((span) => span.name === `query.${name}`), 5_000)).toBe(true);
    },
  },
  'error-masking': {
    deps: () => {
      const backend = demoBackend();
      backend.getTransaction = async () => {
        throw new Error(SECRET);
      };
      return { backend };
    },
    holds: async (gateway, transport) => {
      const answer = await gateway.run(transport, { query: '{ transaction(id: "x") { status } }' });
      expect(answer.errors?.map((error) => error.message)).toEqual(['Unexpected error.']);
      expect(JSON.stringify(answer)).not.toContain('hunter2');
    },
  },
};

async function viaHttp(url: string, operation: Operation, key: string): Promise<Answer> {
  const response = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json', authorization: key },
    body: JSON.stringify(operation),
  });
  return (await response.json()) as Answer;
}

/** What a dashboard's page sends (Apollo Client's defaults): its own origin, and GraphQL over HTTP's media type first. */
async function viaBrowser(url: string, operation: Operation, key: string): Promise<Answer> {
  const response = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/graphql-response+json,application/json;q=0.9',
      authorization: key,
      origin: new URL(url).origin,
    },
    body: JSON.stringify(operation),
  });
  return (await response.json()) as Answer;
}

/** A query in the URL (GraphQL over HTTP's GET), each parameter as its own query-string field. */
async function viaGet(url: string, operation: Operation, key: string): Promise<Answer> {
  const search = new URLSearchParams({ query: operation.query });
  if (operation.variables) search.set('variables', JSON.stringify(operation.variables));
  if (operation.extensions) search.set('extensions', JSON.stringify(operation.extensions));
  if (operation.operationName) search.set('operationName', operation.operationName);
  const response = await fetch(`${url}/graphql?${search}`, { headers: { accept: 'application/json', authorization: key } });
  return (await response.json()) as Answer;
}

/** GraphQL over SSE (yoga's "distinct connections" mode): the `next` payloads of the stream, which a single result ends. */
async function viaSse(url: string, operation: Operation, key: string): Promise<Answer> {
  const response = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream', authorization: key },
    body: JSON.stringify(operation),
  });
  const text = await response.text();
  const payloads = text
    .split('\n\n')
    .filter((frame) => frame.split('\n').includes('event: next'))
    .map(
      (frame) =>
        JSON.parse(
          frame
            .split('\n')
            .find((line) => line.startsWith('data:'))!
            .slice(5),
        ) as Answer,
    );
  expect(payloads).toHaveLength(1);
  return payloads[0]!;
}

/** graphql-ws: the one result, or the `error` message's errors. */
async function viaWs(url: string, operation: Operation, key: string): Promise<Answer> {
  const client = wsClient(url, key);
  try {
    return await new Promise<Answer>((resolve, reject) => {
      let answer: Answer | undefined;
      client.subscribe(operation, {
        next: (result) => void (answer = result as Answer),
        error: (error) =>
          Array.isArray(error)
            ? resolve({ errors: error as Answer['errors'] })
            : reject(error instanceof Error ? error : new Error(JSON.stringify(error))),
        complete: () => (answer ? resolve(answer) : reject(new Error('completed without a result'))),
      });
    });
  } finally {
    await client.dispose();
  }
}

/**
 * What Apollo Client's HttpLink sends from a page (its Accept for subscriptions and @defer, its Origin): a single result may
 * come as JSON; a stream's parts are read until the first that holds a result (subscriptionSpec wraps it in `payload`).
 */
async function viaMultipart(url: string, operation: Operation, key: string): Promise<Answer> {
  const abort = new AbortController();
  const response = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'multipart/mixed;subscriptionSpec="1.0", multipart/mixed;deferSpec=20220824, application/json',
      authorization: key,
      origin: new URL(url).origin,
    },
    body: JSON.stringify(operation),
    signal: abort.signal,
  });
  try {
    return await readMultipart(response, (parts) => parts[0] as Answer | undefined);
  } finally {
    abort.abort();
  }
}

/**
 * Apollo's persisted query link with its defaults: the hash alone first, then, told PERSISTED_QUERY_NOT_FOUND, the text
 * with its hash. An operation that names a hash itself is sent as it is.
 */
async function viaApq(url: string, operation: Operation, key: string): Promise<Answer> {
  if (operation.extensions?.persistedQuery) return viaHttp(url, operation, key);
  const sha256Hash = createHash('sha256').update(operation.query).digest('hex');
  const { query, ...rest } = operation;
  const extensions = { ...operation.extensions, persistedQuery: { version: 1, sha256Hash } };
  const byHash = await viaHttp(url, { ...rest, extensions } as unknown as Operation, key);
  if (!byHash.errors?.some((error) => error.extensions?.code === 'PERSISTED_QUERY_NOT_FOUND')) return byHash;
  return viaHttp(url, { ...rest, query, extensions }, key);
}

const VIA: Record<Transport, (url: string, operation: Operation, key: string) => Promise<Answer>> = {
  http: viaHttp,
  browser: viaBrowser,
  get: viaGet,
  sse: viaSse,
  ws: viaWs,
  multipart: viaMultipart,
  apq: viaApq,
};

const errorsOf = (answer: Answer) => (answer.errors ?? []).map((error) => ({ message: error.message, code: error.extensions?.code }));

let otlp: OtlpReceiver;
const running: RunningGateway[] = [];
beforeAll(async () => {
  otlp = await startOtlpReceiver();
});
afterAll(async () => {
  await Promise.all(running.map((gateway) => gateway.close()));
  await otlp?.close();
});

describe('every rule of the pipeline holds on HTTP, SSE and graphql-ws alike', () => {
  it('has a case for every rule and no case for a rule that is not there', () => {
    expect(Object.keys(CASES).sort()).toEqual([...OPERATION_RULES].sort());
    for (const name of OPERATION_RULES) expect(CASES[name].refusals?.length || CASES[name].holds).toBeTruthy();
  });

  describe.each(OPERATION_RULES.map((name) => [name]))('%s', (name) => {
    const rule = CASES[name];
    let gateway: Gateway;
    beforeAll(async () => {
      const started = await startGateway(rule.env?.({ otlp }) ?? {}, rule.deps?.() ?? {}, rule.tune);
      running.push(started);
      gateway = {
        url: started.url,
        run: (transport, operation, key = TEST_KEY) => VIA[transport](started.url, operation, key),
        metrics: async () => (await fetch(`${started.url}/metrics`)).text(),
      };
    });

    it.each((rule.refusals ?? []).map((refusal) => [refusal.name ?? refusal.message.source, refusal] as const))(
      'refuses %s in the same words on every transport and shape, every time',
      async (_name, refusal) => {
        const { primer } = refusal;
        for (const transport of TRANSPORTS) {
          for (let send = 1; primer && send <= SENDS; send += 1) {
            const answer = await gateway.run(transport, primer.operation, primer.key);
            expect({ transport, send, primer: errorsOf(answer) }).toEqual({ transport, send, primer: [] });
          }
        }
        // The words every shape must answer with: the first send's over HTTP.
        const http = errorsOf(await gateway.run('http', refusal.operation, refusal.key));
        expect(http.some((error) => error.code === refusal.code && refusal.message.test(error.message))).toBe(true);
        for (const transport of TRANSPORTS) {
          for (let send = 1; send <= SENDS; send += 1) {
            const answer = await gateway.run(transport, refusal.operation, refusal.key);
            expect({ transport, send, data: answer.data ?? null, errors: errorsOf(answer) }).toEqual({
              transport,
              send,
              data: null,
              errors: http,
            });
          }
        }
      },
    );

    it.each(rule.holds ? TRANSPORTS.map((transport) => [transport]) : [])('holds over %s', async (transport) => {
      await rule.holds!(gateway, transport, { otlp });
    });
  });
});
