import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startStandInUpstream, type StandInUpstream } from '../helpers/stand-in-upstream.js';

const AUTH = { authorization: 'upstream-key' };
const TX = '8d2f5c1e-6a4b-4f0e-9b3c-1a2b3c4d5e01';
const VM = 'a7e4b2d0-3c5f-4e8a-b1d2-7f6e5d4c3b01';

describe('stand-in upstream', () => {
  let up: StandInUpstream;
  beforeAll(async () => {
    up = await startStandInUpstream();
  });
  afterAll(async () => {
    await up.close();
  });
  beforeEach(() => {
    up.clearFaults();
    up.calls.length = 0;
  });

  const get = (path: string, headers: Record<string, string> = AUTH) => fetch(`${up.url}${path}`, { headers });
  const put = (path: string, body: string) =>
    fetch(`${up.url}${path}`, { method: 'PUT', headers: { ...AUTH, 'content-type': 'application/json' }, body });

  it('serves a transaction with fields the contract does not name', async () => {
    const res = await get(`/transactions/${TX}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    const { data } = (await res.json()) as { data: Record<string, unknown> };
    expect(data).toMatchObject({
      transactionId: TX,
      status: 'active',
      terminalId: 'T-9',
      createdAt: '2026-01-01T10:00:00Z',
      meta: { source: 'kiosk', tags: ['a', 'b'] },
    });
    expect((data.products as unknown[])[0]).toMatchObject({ productSku: 'BEV-COLA-050', quantity: 1, vatRate: 0.19 });
    expect(up.transactions).toHaveLength(5);
  });

  it('accepts the key with a Bearer prefix too', async () => {
    expect((await get(`/transactions/${TX}`, { authorization: 'Bearer upstream-key' })).status).toBe(200);
  });

  it('lists vendings flat by default and with the flat value', async () => {
    for (const q of ['', '?products=flat']) {
      const body = (await (await get(`/vendings${q}`)).json()) as { data: Array<Record<string, unknown>> };
      expect(body.data).toHaveLength(4);
      expect(Array.isArray(body.data[0]?.products)).toBe(true);
      expect(body.data[0]).toMatchObject({ firmware: { version: '4.2.1' }, countryCode: 'DE', currencyCode: 'EUR' });
    }
    expect(new Set(up.vendings.map((v) => v.currencyCode))).toEqual(new Set(['EUR', 'GBP']));
  });

  it('serves one vending as a grid planogram', async () => {
    const res = await get(`/vendings/${VM}?products=planogram`);
    expect(res.status).toBe(200);
    const { data } = (await res.json()) as { data: { products: unknown } };
    expect(data.products).toMatchObject({
      layout: 'grid',
      rows: [{ row: 1, columns: [{ column: 1, capacity: 10, stock: 8 }, {}, {}] }, { row: 2 }],
    });
  });

  it('answers 401 for a missing or wrong key, before looking at ids', async () => {
    for (const headers of [{}, { authorization: 'nope' }, { authorization: 'Bearer nope' }] as Record<string, string>[]) {
      const res = await get('/transactions/unknown', headers);
      expect(res.status).toBe(401);
      expect(await res.json()).toEqual({ errors: { message: expect.any(String) } });
    }
  });

  it('answers 404 for unknown ids and paths, 405 for a wrong method', async () => {
    expect((await get('/transactions/00000000-0000-4000-8000-000000000000')).status).toBe(404);
    expect((await get('/vendings/00000000-0000-4000-8000-000000000000')).status).toBe(404);
    const unknown = await get('/nowhere');
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({ errors: { message: expect.any(String) } });
    expect((await fetch(`${up.url}/vendings`, { method: 'POST', headers: AUTH })).status).toBe(405);
    expect((await put(`/transactions/00000000-0000-4000-8000-000000000000/payment`, '{}')).status).toBe(404);
  });

  it('answers 400 for an unknown products value', async () => {
    const res = await get('/vendings?products=tree');
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ errors: { message: expect.any(String) } });
  });

  it('stores a payment body and rejects bodies that are not JSON objects', async () => {
    const id = '8d2f5c1e-6a4b-4f0e-9b3c-1a2b3c4d5e02';
    const ok = await put(`/transactions/${id}/payment`, '{"status":"paid","customer":{"email":"a@b.c"}}');
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({});
    expect(up.transactions.find((t) => t.transactionId === id)?.payment).toEqual({ status: 'paid', customer: { email: 'a@b.c' } });
    expect((await put(`/transactions/${id}/payment`, 'not json')).status).toBe(400);
    expect((await put(`/transactions/${id}/payment`, '[1,2]')).status).toBe(400);
    expect((await put(`/transactions/${id}/payment`, 'null')).status).toBe(400);
  });

  it('consumes a fault once, then answers normally', async () => {
    up.injectFault({ kind: 'status', status: 503 }, { method: 'GET', pathPrefix: '/vendings' });
    expect((await get(`/transactions/${TX}`)).status).toBe(200); // does not match, fault stays queued
    const faulted = await get('/vendings');
    expect(faulted.status).toBe(503);
    expect(await faulted.text()).toBe('{"errors":{"message":"injected"}}');
    expect((await get('/vendings')).status).toBe(200);
  });

  it('serves the malformed-answer faults', async () => {
    up.injectFault({ kind: 'html' });
    up.injectFault({ kind: 'not-json' });
    up.injectFault({ kind: 'wrong-shape' }, { times: 2 });
    const html = await get('/vendings');
    expect([html.status, html.headers.get('content-type')]).toEqual([500, 'text/html']);
    expect(await (await get('/vendings')).text()).toBe('this is not json');
    expect(await (await get('/vendings')).json()).toEqual({ items: [] });
    expect(await (await get('/vendings')).json()).toEqual({ items: [] });
    expect((await (await get('/vendings')).json()) as object).toHaveProperty('data');
  });

  it('lets a client abort a hanging request, and resets a socket', async () => {
    up.injectFault({ kind: 'hang' });
    await expect(fetch(`${up.url}/vendings`, { headers: AUTH, signal: AbortSignal.timeout(200) })).rejects.toThrow();
    up.injectFault({ kind: 'reset' });
    await expect(get('/vendings')).rejects.toThrow();
    expect(up.calls).toHaveLength(2);
    expect((await get('/vendings')).status).toBe(200);
  });

  it('records every call, in order', async () => {
    await get('/vendings?products=flat', { authorization: 'Bearer upstream-key' });
    await put(`/transactions/${TX}/payment`, '{"a":1}');
    await get('/nowhere', {});
    expect(up.calls).toEqual([
      { method: 'GET', path: '/vendings', query: 'products=flat', authorization: 'Bearer upstream-key', body: '' },
      { method: 'PUT', path: `/transactions/${TX}/payment`, query: '', authorization: 'upstream-key', body: '{"a":1}' },
      { method: 'GET', path: '/nowhere', query: '', authorization: undefined, body: '' },
    ]);
    expect(up.callsTo('put', '/transactions')).toHaveLength(1);
    expect(up.callsTo('GET', '/vendings')).toHaveLength(1);
  });
});

describe('stand-in upstream options and close', () => {
  it('uses custom keys and products values', async () => {
    const up = await startStandInUpstream({ keys: ['k1', 'k2'], productsValues: { flat: 'list', planogram: 'layout' } });
    try {
      const get = (path: string, key: string) => fetch(`${up.url}${path}`, { headers: { authorization: key } });
      expect((await get('/vendings', 'upstream-key')).status).toBe(401);
      expect((await get('/vendings?products=list', 'k2')).status).toBe(200);
      expect((await get('/vendings?products=flat', 'k1')).status).toBe(400);
      const { data } = (await (await get('/vendings?products=layout', 'Bearer k1')).json()) as { data: Array<{ products: unknown }> };
      expect(data[0]?.products).toMatchObject({ layout: 'grid' });
    } finally {
      await up.close();
    }
  });

  it('close() ends a hanging request', async () => {
    const up = await startStandInUpstream();
    up.injectFault({ kind: 'hang' });
    const pending = fetch(`${up.url}/vendings`, { headers: AUTH });
    await expect.poll(() => up.calls.length).toBe(1);
    await up.close();
    await expect(pending).rejects.toThrow();
  });
});
