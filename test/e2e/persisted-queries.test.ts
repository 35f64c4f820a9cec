import { createHash } from 'node:crypto';
import { ApolloClient, HttpLink, InMemoryCache } from '@apollo/client';
import { PersistedQueryLink } from '@apollo/client/link/persisted-queries';
import { parse } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TransactionDetailDocument } from '../../src/graphql/generated/operations.js';
import { startGateway, TEST_KEY, type RunningGateway } from '../helpers/gateway.js';

/*
 * Automatic persisted queries as Apollo Client sends them, with its own link
 * and its defaults: the first send of an operation is its hash alone, which
 * the gateway does not know (PERSISTED_QUERY_NOT_FOUND, in the words the link
 * understands); the link then sends the text with the hash, which registers
 * it; later sends are the hash alone, served. POST and GET
 * (`useGETForHashedQueries`). With TRUSTED_DOCUMENTS=only nothing is
 * registered and the link is told so; a hash that is not its text's is
 * refused. Before, every operation through the link failed: the hash-only
 * request was answered 200 "Must provide query string.".
 */

const ID = 'e96a1bb8-6da9-49e4-9881-15f7e15d33a3';
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

interface Sent {
  method: string;
  hashOnly: boolean;
}

function apollo(url: string, useGETForHashedQueries = false): { client: ApolloClient; sent: Sent[] } {
  const sent: Sent[] = [];
  const http = new HttpLink({
    uri: `${url}/graphql`,
    headers: { authorization: TEST_KEY },
    fetch: async (input, init) => {
      const method = init?.method ?? 'GET';
      const query =
        method === 'GET' ? new URL(String(input)).searchParams.get('query') : (JSON.parse(String(init?.body)) as { query?: string }).query;
      sent.push({ method, hashOnly: !query });
      return fetch(input, init);
    },
  });
  const link = new PersistedQueryLink({ sha256, useGETForHashedQueries }).concat(http);
  return { client: new ApolloClient({ link, cache: new InMemoryCache() }), sent };
}

describe("Apollo Client's persisted query link", () => {
  let running: RunningGateway;
  let trusted: RunningGateway;
  beforeAll(async () => {
    running = await startGateway({ SIMULATOR: 'off' });
    trusted = await startGateway({
      SIMULATOR: 'off',
      TRUSTED_DOCUMENTS: 'only',
      NODE_ENV: 'production',
      API_KEYS: TEST_KEY,
      WEBHOOK_UNSIGNED: 'allow',
    });
  });
  afterAll(async () => {
    await running?.close();
    await trusted?.close();
  });

  for (const useGET of [false, true]) {
    it(`registers an operation at its first send and serves it by hash after (${useGET ? 'GET' : 'POST'} for hashes)`, async (ctx) => {
      // A gateway of its own: nothing registered before.
      const fresh = await startGateway({ SIMULATOR: 'off' });
      ctx.onTestFinished(() => fresh.close());
      const first = apollo(fresh.url, useGET);
      const answer = await first.client.query({ query: TransactionDetailDocument, variables: { id: ID }, fetchPolicy: 'network-only' });
      expect(answer.data?.transaction?.transactionId).toBe(ID);
      // The hash alone, refused as unknown; then the text with its hash (always a POST).
      expect(first.sent).toEqual([
        { method: useGET ? 'GET' : 'POST', hashOnly: true },
        { method: 'POST', hashOnly: false },
      ]);
      // A client that never sent the text (another browser): served by hash at once, three times.
      const later = apollo(fresh.url, useGET);
      for (let send = 1; send <= 3; send += 1) {
        const again = await later.client.query({ query: TransactionDetailDocument, variables: { id: ID }, fetchPolicy: 'network-only' });
        expect(again.data?.transaction?.transactionId, `send ${send}`).toBe(ID);
      }
      expect(later.sent).toEqual(Array.from({ length: 3 }, () => ({ method: useGET ? 'GET' : 'POST', hashOnly: true })));
    });
  }

  it('answers an unknown hash with PERSISTED_QUERY_NOT_FOUND, and a hash that is not its text with PERSISTED_QUERY_MISMATCH, never a 200', async () => {
    const post = (body: unknown) =>
      fetch(`${running.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: TEST_KEY, accept: 'application/graphql-response+json' },
        body: JSON.stringify(body),
      });
    for (let send = 1; send <= 3; send += 1) {
      const unknown = await post({ extensions: { persistedQuery: { version: 1, sha256Hash: sha256(`{ __typename } # ${send}`) } } });
      expect(unknown.status).not.toBe(200);
      const { errors } = (await unknown.json()) as { errors: Array<{ message: string; extensions: { code: string } }> };
      expect(errors.map((error) => [error.message, error.extensions.code])).toEqual([
        ['PersistedQueryNotFound', 'PERSISTED_QUERY_NOT_FOUND'],
      ]);

      const mismatch = await post({
        query: '{ __typename }',
        extensions: { persistedQuery: { version: 1, sha256Hash: sha256('{ other }') } },
      });
      expect(mismatch.status).toBe(400);
      const refused = (await mismatch.json()) as { errors: Array<{ extensions: { code: string } }> };
      expect(refused.errors[0]?.extensions.code).toBe('PERSISTED_QUERY_MISMATCH');
    }
  });

  it('holds the same rules by hash as by text: a document past the bound on aliases is refused at every send', async () => {
    // Sixty aliases, past the bound of 50.
    const tooMany = `query TooMany { ${Array.from({ length: 60 }, (_, n) => `a${n}: vending(id: "v${n}") { vendingId }`).join(' ')} }`;
    const post = (body: unknown) =>
      fetch(`${running.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: TEST_KEY, accept: 'application/graphql-response+json' },
        body: JSON.stringify(body),
      }).then(async (answer) => ({
        status: answer.status,
        body: (await answer.json()) as { errors?: Array<{ extensions: { code: string } }> },
      }));
    const persisted = (text: string) => ({ persistedQuery: { version: 1, sha256Hash: sha256(text) } });
    const byText = await post({ query: tooMany, extensions: persisted(tooMany) });
    expect(byText.body.errors?.[0]?.extensions.code).toBe('BAD_USER_INPUT');
    for (let send = 1; send <= 3; send += 1) {
      const byHash = await post({ extensions: persisted(tooMany) });
      expect(byHash.body.errors?.[0]?.extensions.code, `send ${send}`).toBe('BAD_USER_INPUT');
    }
  });

  it('with TRUSTED_DOCUMENTS=only registers nothing: the link gets the trusted-document refusal, every time', async () => {
    const { client, sent } = apollo(trusted.url);
    for (let send = 1; send <= 3; send += 1) {
      const outcome = await client.query({ query: parse('query Mine { __typename }'), fetchPolicy: 'network-only' }).then(
        () => 'answered',
        (error: Error) => error.message,
      );
      expect(outcome, `send ${send}`).toMatch(/trusted documents/i);
    }
    // Each time the hash, unknown, then the text, refused: nothing was registered by the first.
    expect(sent).toEqual(
      Array.from({ length: 3 }, () => [
        { method: 'POST', hashOnly: true },
        { method: 'POST', hashOnly: false },
      ]).flat(),
    );
  });
});
