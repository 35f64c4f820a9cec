import type { GraphQLFormattedError } from 'graphql';
import { createClient as createSseClient } from 'graphql-sse';
import { createClient as createWsClient } from 'graphql-ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { ERROR_CODES } from '../../src/errors.js';
import { buildWebhookRequest } from '../../src/events/webhook-request.js';
import { readMultipart } from '../helpers/multipart.js';
import { demoBackend, startGateway, type RunningGateway } from '../helpers/gateway.js';
import { waitFor } from '../helpers/wait-for.js';

/*
 * What a client reads in an error is the catalogue's code and the extensions
 * documented with it, on every transport. yoga marks errors for its own use
 * (`extensions.http`: the status and headers of an HTTP answer;
 * `extensions.unexpected`: a masked error) and drops the marks when it writes
 * an HTTP answer; the other transports' writers must not send them either.
 * Each transport is driven by the client users run, sending what a browser
 * sends (an `Origin`).
 */

const ALL = 'all-key';
const READ_ONLY = 'read-only-key';
/** A transaction whose read fails unexpectedly: its error is masked. */
const BROKEN = 'broken-transaction';
/** Extensions yoga keeps for itself, and what masking must never reveal. */
const INTERNAL = ['http', 'unexpected', 'originalError', 'stack', 'exception'];

interface Case {
  name: string;
  key: string;
  query: string;
  /** Sent once the subscription is open: makes the failing event. */
  webhookFor?: string;
}

const CASES: Case[] = [
  { name: 'a subscription with bad input', key: ALL, query: 'subscription { transactionUpdated(transactionId: "a/b") { status } }' },
  { name: 'a subscription with an unknown field', key: ALL, query: 'subscription { transactionUpdated { nope } }' },
  { name: 'a subscription without the permission', key: READ_ONLY, query: 'subscription { transactionUpdated { status } }' },
  { name: 'a subscription that does not parse', key: ALL, query: 'subscription { transactionUpdated { ' },
  {
    name: 'a subscription whose event fails unexpectedly',
    key: ALL,
    query: `subscription { transactionUpdated(transactionId: "${BROKEN}") { status transaction { total } } }`,
    webhookFor: BROKEN,
  },
  { name: 'a query with bad input', key: ALL, query: '{ transaction(id: "a/b") { status } }' },
  { name: 'a query with an unknown field', key: ALL, query: '{ transaction(id: "x") { nope } }' },
  { name: 'a query that fails unexpectedly', key: ALL, query: `{ transaction(id: "${BROKEN}") { status } }` },
  {
    name: 'a deferred part that fails unexpectedly',
    key: ALL,
    query: `{ __typename ... @defer { transaction(id: "${BROKEN}") { status } } }`,
  },
  {
    name: 'a mutation without the permission',
    key: READ_ONLY,
    query: 'mutation { updateTransactionPayment(transactionId: "x", payment: {paid: true}) { transaction { id } } }',
  },
];

let running: RunningGateway;
beforeAll(async () => {
  const backend = demoBackend();
  const read = backend.getTransaction.bind(backend);
  backend.getTransaction = async (id, ...rest) => {
    if (id === BROKEN) throw new Error('the store fell over');
    return read(id, ...rest);
  };
  running = await startGateway({ API_KEYS: `${ALL}, ${READ_ONLY}:read`, SIMULATOR: 'off' }, { backend });
});
afterAll(() => running.close());

/** Posts the webhook that makes `transactionId`'s event once a subscription is open, so it reaches that subscription. */
async function whenSubscribed(transactionId: string): Promise<void> {
  expect(await waitFor(() => running.gateway.activeSubscriptions() === 1, 5_000)).toBe(true);
  const request = buildWebhookRequest({ form: 'legacy', transaction: { transactionId, status: `failing-${Date.now()}`, products: [] } });
  expect((await fetch(`${running.url}/webhooks`, { method: 'POST', headers: request.headers, body: request.body })).status).toBe(200);
}

/** A result, or a part of one (`@defer`): its errors, and those of its deferred parts. */
interface Incremental {
  errors?: GraphQLFormattedError[];
  incremental?: Array<{ errors?: GraphQLFormattedError[] }>;
}
const errorsOf = (result: Incremental): GraphQLFormattedError[] => [
  ...(result.errors ?? []),
  ...(result.incremental ?? []).flatMap((part) => part.errors ?? []),
];

/** The errors a client was given: in results, or as the operation's failure. */
type Run = (test: Case) => Promise<GraphQLFormattedError[]>;

const collect = (settle: (errors: GraphQLFormattedError[]) => void) => {
  const errors: GraphQLFormattedError[] = [];
  return {
    errors,
    next: (result: unknown) => {
      errors.push(...errorsOf(result as Incremental));
      if (errors.length > 0) settle(errors);
    },
    error: (failure: unknown) => {
      errors.push(...(Array.isArray(failure) ? (failure as GraphQLFormattedError[]) : []));
      settle(errors);
    },
    complete: () => settle(errors),
  };
};

/** The errors of `test`'s operation through a graphql-ws or graphql-sse client (both subscribe with a sink), until it settles. */
const errorsOver = (client: { subscribe(payload: { query: string }, sink: ReturnType<typeof collect>): unknown }, test: Case) =>
  new Promise<GraphQLFormattedError[]>((resolve) => {
    client.subscribe({ query: test.query }, collect(resolve));
    if (test.webhookFor) void whenSubscribed(test.webhookFor);
  });

const overGraphQLWs: Run = async (test) => {
  const origin = running.url;
  const client = createWsClient({
    url: `${running.url.replace(/^http/, 'ws')}/graphql`,
    // What a browser's WebSocket sends, besides the protocol.
    webSocketImpl: class extends WebSocket {
      constructor(address: string, protocols?: string | string[]) {
        super(address, protocols, { headers: { origin } });
      }
    },
    connectionParams: { Authorization: test.key },
    retryAttempts: 0,
  });
  try {
    return await errorsOver(client, test);
  } finally {
    await client.dispose();
  }
};

const overSse: Run = async (test) => {
  const client = createSseClient({
    url: `${running.url}/graphql`,
    headers: { Authorization: test.key, Origin: running.url },
    retryAttempts: 0,
  });
  try {
    return await errorsOver(client, test);
  } finally {
    client.dispose();
  }
};

/** What Apollo Client's HttpLink sends (its `Accept` for a subscription, or for a query with @defer), read part by part. */
const overMultipart: Run = async (test) => {
  const abort = new AbortController();
  const response = await fetch(`${running.url}/graphql`, {
    method: 'POST',
    headers: {
      authorization: test.key,
      origin: running.url,
      'content-type': 'application/json',
      accept: 'multipart/mixed;subscriptionSpec="1.0", multipart/mixed;deferSpec=20220824, application/json',
    },
    body: JSON.stringify({ query: test.query }),
    signal: abort.signal,
  });
  if (test.webhookFor && (response.headers.get('content-type') ?? '').startsWith('multipart/mixed')) void whenSubscribed(test.webhookFor);
  try {
    return await readMultipart(response, (parts, done) => {
      const errors = parts.flatMap((part) => errorsOf(part as Incremental));
      return errors.length > 0 || done ? errors : undefined;
    });
  } finally {
    abort.abort();
  }
};

describe.each([
  ['graphql-ws', overGraphQLWs],
  ['SSE (graphql-sse)', overSse],
  ['HTTP multipart', overMultipart],
])('errors over %s', (_transport, run) => {
  it.each(CASES)('$name: a code of the catalogue, no internal extension', async (test) => {
    const errors = await run(test);
    expect(errors.length).toBeGreaterThan(0);
    for (const error of errors) {
      expect(ERROR_CODES).toContain(error.extensions?.code);
      for (const internal of INTERNAL) expect(error.extensions ?? {}).not.toHaveProperty(internal);
      expect(JSON.stringify(error)).not.toContain('fell over');
    }
    expect(await waitFor(() => running.gateway.activeSubscriptions() === 0, 5_000)).toBe(true);
  });
});
