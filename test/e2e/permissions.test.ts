import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDemoData } from '../../src/backends/memory/demo-data.js';
import { buildWebhookRequest } from '../../src/events/webhook-request.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { codesOf, postGraphQL } from '../helpers/graphql-client.js';
import { sseSubscribe } from '../helpers/sse-client.js';
import { waitFor } from '../helpers/wait-for.js';
import { subscribe, wsClient } from '../helpers/ws-client.js';

/*
 * Identities and permissions: each key has permissions
 * (read: queries and REST GETs, subscribe: live events, pay: the payment
 * mutation and REST PUT); a request beyond them gets FORBIDDEN (REST 403) on
 * every transport. Keys in API_KEYS_FILE change without a restart, and a
 * revoked key's open subscriptions end.
 */

const DASHBOARD = 'dashboard-key';
const TILL = 'till-key';
const LEGACY = 'plain-key';
const [transaction] = createDemoData().transactions;
const id = transaction!.transactionId;
const QUERY = 'query One($id: ID!) { transaction(id: $id) { transactionId status } }';
const MUTATION =
  'mutation Pay($id: ID!) { updateTransactionPayment(transactionId: $id, payment: {status: "paid"}) { transaction { transactionId } } }';
const SUBSCRIPTION = 'subscription { transactionUpdated { transactionId status } }';

async function postWebhook(url: string, status: string): Promise<void> {
  const request = buildWebhookRequest({ form: 'legacy', transaction: { transactionId: id, status, products: [] } });
  expect((await fetch(`${url}/webhooks`, { method: 'POST', headers: request.headers, body: request.body })).status).toBe(200);
}

const rest = (url: string, key: string, method = 'GET', path = `/transactions/${id}`, body?: string) =>
  fetch(`${url}${path}`, { method, headers: { authorization: key, 'content-type': 'application/json' }, body });

describe('keys declared with their permissions (API_KEYS=key:read+subscribe,…)', () => {
  let running: RunningGateway;
  beforeAll(async () => {
    running = await startGateway({ API_KEYS: `${DASHBOARD}:read+subscribe, ${TILL}:pay, ${LEGACY}` });
  });
  afterAll(() => running.close());

  it('a read+subscribe key queries, subscribes over graphql-ws and SSE, and is refused the payment', async () => {
    const query = await postGraphQL(running.url, QUERY, { key: DASHBOARD, variables: { id } });
    expect(query.body).toEqual({ data: { transaction: { transactionId: id, status: transaction!.status } } });

    const client = wsClient(running.url, DASHBOARD);
    const ws = subscribe(client, SUBSCRIPTION);
    const sse = await sseSubscribe(running.url, SUBSCRIPTION, DASHBOARD);
    expect(sse.status).toBe(200);
    expect(await waitFor(() => running.gateway.activeSubscriptions() === 2)).toBe(true);
    await postWebhook(running.url, 'watched');
    expect((await ws.next()).data).toEqual({ transactionUpdated: { transactionId: id, status: 'watched' } });
    sse.close();
    await client.dispose();

    const payment = await postGraphQL(running.url, MUTATION, { key: DASHBOARD, variables: { id } });
    expect(payment.status).toBe(200);
    expect(payment.body.data ?? null).toBeNull();
    expect(codesOf(payment)).toEqual(['FORBIDDEN']);
    expect(payment.body.errors![0]!.message).toContain('"pay"');

    const put = await rest(running.url, DASHBOARD, 'PUT', `/transactions/${id}/payment`, '{"status":"paid"}');
    expect(put.status).toBe(403);
    expect(await put.json()).toEqual({ errors: { message: 'This API key or token lacks the "pay" permission' } });
    expect((await rest(running.url, DASHBOARD)).status).toBe(200);
  });

  it('a pay-only key pays over GraphQL and REST, and may neither read nor subscribe (graphql-ws and SSE)', async () => {
    // The payment is made; the transaction read back is for keys that may read.
    const paid = await postGraphQL(running.url, MUTATION, { key: TILL, variables: { id } });
    expect(codesOf(paid)).toEqual(['FORBIDDEN']);
    expect(paid.body.data).toEqual({ updateTransactionPayment: { transaction: null } });
    expect(paid.body.errors?.[0]?.path).toEqual(['updateTransactionPayment', 'transaction']);
    expect((await rest(running.url, TILL, 'PUT', `/transactions/${id}/payment`, '{"status":"paid"}')).status).toBe(200);
    expect(codesOf(await postGraphQL(running.url, QUERY, { key: TILL, variables: { id } }))).toEqual(['FORBIDDEN']);
    expect((await rest(running.url, TILL)).status).toBe(403);
    expect((await rest(running.url, TILL, 'GET', '/vendings')).status).toBe(403);

    const client = wsClient(running.url, TILL);
    const ws = subscribe(client, SUBSCRIPTION);
    const refused = await ws.next();
    expect(refused.errors?.map((error) => (error as { extensions?: { code?: string } }).extensions?.code)).toEqual(['FORBIDDEN']);
    expect(await ws.ended).toBe('complete');
    await client.dispose();

    const sse = await fetch(`${running.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', authorization: TILL },
      body: JSON.stringify({ query: SUBSCRIPTION }),
    });
    const body = await sse.text();
    expect(body).toContain('"FORBIDDEN"');
    expect(body).toContain('event: complete');
  });

  it("is judged the same on every path to an operation: yoga's whole handler (GET) and graphql-ws queries and mutations", async () => {
    const get = await fetch(
      `${running.url}/graphql?query=${encodeURIComponent(QUERY)}&variables=${encodeURIComponent(JSON.stringify({ id }))}`,
      {
        headers: { accept: 'application/json', authorization: TILL },
      },
    );
    expect(
      ((await get.json()) as { errors: Array<{ extensions: { code: string } }> }).errors.map((error) => error.extensions.code),
    ).toEqual(['FORBIDDEN']);

    const client = wsClient(running.url, DASHBOARD);
    const mutation = subscribe(client, MUTATION, { id });
    expect((await mutation.next()).errors?.map((error) => (error as { extensions?: { code?: string } }).extensions?.code)).toEqual([
      'FORBIDDEN',
    ]);
    const query = subscribe(client, QUERY, { id });
    expect((await query.next()).data).toEqual({ transaction: { transactionId: id, status: expect.any(String) } });
    await client.dispose();
  });

  it('a key written without a list keeps all three, as before', async () => {
    expect(codesOf(await postGraphQL(running.url, QUERY, { key: LEGACY, variables: { id } }))).toEqual([]);
    expect(codesOf(await postGraphQL(running.url, MUTATION, { key: LEGACY, variables: { id } }))).toEqual([]);
    expect((await rest(running.url, `Bearer ${LEGACY}`)).status).toBe(200);
  });

  it('an unknown permission stops the gateway from starting, without repeating the key', async () => {
    await expect(startGateway({ API_KEYS: 'secret-one:read+admin' })).rejects.toThrow(/^API_KEYS must be comma-separated keys, each alone/);
    await expect(startGateway({ API_KEYS: 'secret-one:read+admin' })).rejects.not.toThrow(/secret-one/);
  });
});

describe('keys in API_KEYS_FILE', () => {
  let dir: string;
  let file: string;
  let running: RunningGateway;
  /** Writes the file as editors do: a new file renamed over the old one. */
  const writeKeys = (text: string) => {
    writeFileSync(`${file}.tmp`, text);
    renameSync(`${file}.tmp`, file);
  };
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'keys-'));
    file = join(dir, 'keys.txt');
    writeFileSync(file, `# the dashboard\n${DASHBOARD}:read+subscribe\n\nold-key\n`);
    running = await startGateway({ API_KEYS: '', API_KEYS_FILE: file });
  });
  afterAll(async () => {
    await running.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('that cannot be read, or have a bad line, stop the gateway from starting in one line naming the variable and the line', async () => {
    await expect(startGateway({ API_KEYS_FILE: join(dir, 'missing') })).rejects.toThrow(
      /^API_KEYS_FILE must be a readable file of key entries \(ENOENT/,
    );
    const bad = join(dir, 'bad.txt');
    writeFileSync(bad, 'fine-key\nsecret-typo:raed\n');
    const error = await startGateway({ API_KEYS_FILE: bad }).catch((thrown: Error) => thrown);
    expect(String(error)).toMatch(/line 2: permissions after the last ":" must be read, subscribe, pay/);
    expect(String(error)).not.toContain('secret-typo');
  });

  it('are read at start; the development key is not added to them', async () => {
    expect(codesOf(await postGraphQL(running.url, QUERY, { key: DASHBOARD, variables: { id } }))).toEqual([]);
    expect(codesOf(await postGraphQL(running.url, MUTATION, { key: 'old-key', variables: { id } }))).toEqual([]);
    expect((await postGraphQL(running.url, QUERY, { key: 'dev-key-vending-gateway', variables: { id } })).status).toBe(401);
  });

  it('edited while a graphql-ws client is subscribed: its subscription ends, the new key works, no restart', async () => {
    const client = wsClient(running.url, 'old-key');
    const ws = subscribe(client, SUBSCRIPTION);
    expect(await waitFor(() => running.gateway.activeSubscriptions() === 1)).toBe(true);
    await postWebhook(running.url, 'before-rotation');
    expect((await ws.next()).data).toMatchObject({ transactionUpdated: { status: 'before-rotation' } });

    writeKeys(`${DASHBOARD}:read+subscribe\nnew-key:read\n`);
    const revoked = await ws.next(5_000);
    expect(revoked.errors?.map((error) => (error as { extensions?: { code?: string } }).extensions?.code)).toEqual(['UNAUTHENTICATED']);
    expect(await ws.ended).toBe('complete');
    expect(running.gateway.activeSubscriptions()).toBe(0);
    await client.dispose();

    expect((await postGraphQL(running.url, QUERY, { key: 'old-key', variables: { id } })).status).toBe(401);
    expect(codesOf(await postGraphQL(running.url, QUERY, { key: 'new-key', variables: { id } }))).toEqual([]);
    expect(codesOf(await postGraphQL(running.url, MUTATION, { key: 'new-key', variables: { id } }))).toEqual(['FORBIDDEN']);
  });

  it('a key that loses `subscribe` loses its SSE stream; a bad file is refused whole and the keys in use stay', async () => {
    const sse = await sseSubscribe(running.url, SUBSCRIPTION, DASHBOARD);
    expect(sse.status).toBe(200);
    expect(await waitFor(() => running.gateway.activeSubscriptions() === 1)).toBe(true);
    writeKeys(`${DASHBOARD}:read\nnew-key:read\n`);
    expect(await Promise.race([sse.ended, new Promise((resolve) => setTimeout(() => resolve('still open'), 5_000))])).toBe('complete');
    expect(sse.raw()).toContain('"FORBIDDEN"');

    writeKeys(`${DASHBOARD}:read+subscribe\nnew-key:raed\n`);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(codesOf(await postGraphQL(running.url, QUERY, { key: 'new-key', variables: { id } }))).toEqual([]);
  });
});

describe('a key file mounted as Kubernetes mounts a ConfigMap', () => {
  it('changes when the symlinked folder behind it is swapped', async () => {
    // keys → ..data/keys, ..data → a folder per version; an update renames a new ..data over the old one.
    const dir = mkdtempSync(join(tmpdir(), 'configmap-'));
    const version = (name: string, text: string) => {
      mkdirSync(join(dir, name));
      writeFileSync(join(dir, name, 'keys'), text);
      symlinkSync(name, join(dir, '..data_tmp'));
      renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
    };
    version('v1', 'first-key\n');
    symlinkSync('..data/keys', join(dir, 'keys'));
    const running = await startGateway({ API_KEYS_FILE: join(dir, 'keys') });
    try {
      expect(codesOf(await postGraphQL(running.url, QUERY, { key: 'first-key', variables: { id } }))).toEqual([]);
      version('v2', 'second-key\n');
      let status = 0;
      for (let tries = 0; tries < 100 && status !== 200; tries += 1) {
        if (tries > 0) await new Promise((resolve) => setTimeout(resolve, 50));
        status = (await postGraphQL(running.url, QUERY, { key: 'second-key', variables: { id } })).status;
      }
      expect(status).toBe(200);
      expect((await postGraphQL(running.url, QUERY, { key: 'first-key', variables: { id } })).status).toBe(401);
    } finally {
      await running.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('whole results kept by the response cache (CACHE_TTL_MS)', () => {
  it('are not served to a key that lost `read` since', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cached-'));
    const file = join(dir, 'keys');
    writeFileSync(file, 'cached-key:read\n');
    const running = await startGateway({ API_KEYS_FILE: file, CACHE_TTL_MS: '600000' });
    try {
      const first = await fetch(`${running.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'cached-key' },
        body: JSON.stringify({ query: QUERY, variables: { id } }),
      });
      expect(first.status).toBe(200);
      const etag = first.headers.get('etag');
      expect(etag).toBeTruthy();
      writeFileSync(`${file}.tmp`, 'cached-key:pay\n');
      renameSync(`${file}.tmp`, file);
      let codes: Array<string | undefined> = [];
      for (let tries = 0; tries < 100 && codes[0] !== 'FORBIDDEN'; tries += 1) {
        if (tries > 0) await new Promise((resolve) => setTimeout(resolve, 50));
        codes = codesOf(await postGraphQL(running.url, QUERY, { key: 'cached-key', variables: { id } }));
      }
      expect(codes).toEqual(['FORBIDDEN']);
      const revalidated = await fetch(`${running.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'cached-key', 'if-none-match': etag! },
        body: JSON.stringify({ query: QUERY, variables: { id } }),
      });
      expect(revalidated.status).toBe(200);
      expect(await revalidated.text()).toContain('FORBIDDEN');
    } finally {
      await running.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
