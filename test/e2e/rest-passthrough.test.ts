import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDemoData } from '../../src/backends/memory/demo-data.js';
import { answeringGateway, TEST_KEY, type RunningGateway } from '../helpers/gateway.js';

const demo = createDemoData();
const tx = demo.transactions[3]!;
const vm = demo.vendings[2]!;

let running: RunningGateway;
beforeAll(async () => {
  running = await answeringGateway();
});
afterAll(() => running.close());

async function call(
  path: string,
  init: RequestInit & { key?: string | null } = {},
): Promise<{ status: number; body: any; headers: Headers }> {
  const headers = new Headers(init.headers);
  if (init.key !== null) headers.set('authorization', init.key ?? TEST_KEY);
  const response = await running.fetch(`${running.url}${path}`, { ...init, headers });
  expect(response.headers.get('content-type')).toMatch(/^application\/json/);
  return { status: response.status, body: await response.json(), headers: response.headers };
}

/** The contract's error envelope (part 7): exactly `{errors: {message: string}}`. */
function expectErrorEnvelope(body: unknown): void {
  expect(Object.keys(body as object)).toEqual(['errors']);
  const { errors } = body as { errors: Record<string, unknown> };
  expect(Object.keys(errors)).toEqual(['message']);
  expect(typeof errors.message).toBe('string');
  expect((errors.message as string).length).toBeGreaterThan(0);
}

const productLineFields = ['productId', 'productName', 'productPrice', 'productThumbnail', 'productSku', 'quantity'];
const vendingFields = [
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

function expectProductLine(line: Record<string, unknown>): void {
  expect(Object.keys(line).sort()).toEqual([...productLineFields].sort());
  expect(typeof line.productId).toBe('string');
  expect(typeof line.productName).toBe('string');
  expect(typeof line.productPrice).toBe('number');
  // An address, or (the demo, which draws its thumbnails itself) a path of the gateway.
  expect(line.productThumbnail).toMatch(/^(https:\/\/|\/dashboard\/products\/)/);
  expect(typeof line.productSku).toBe('string');
  expect(typeof line.quantity).toBe('number');
}

function expectVending(vending: Record<string, unknown>): void {
  expect(Object.keys(vending).sort()).toEqual([...vendingFields].sort());
  for (const field of ['vendingId', 'status', 'address', 'building', 'countryCode', 'currencyCode', 'identifier', 'posId']) {
    expect(typeof vending[field], field).toBe('string');
  }
  expect(typeof vending.online).toBe('boolean');
  expect(typeof vending.enabled).toBe('boolean');
}

describe('GET /transactions/{id}', () => {
  it('answers {data: Transaction} with the contract fields, and the fields beyond them the service sends', async () => {
    const { status, body } = await call(`/transactions/${tx.transactionId}`);
    expect(status).toBe(200);
    expect(Object.keys(body)).toEqual(['data']);
    // The demo's transactions carry their machine and its currency, as a service that links them would.
    expect(Object.keys(body.data).sort()).toEqual(['currencyCode', 'customerId', 'products', 'status', 'transactionId', 'vendingId']);
    expect(body.data).toEqual(tx);
    body.data.products.forEach(expectProductLine);
  });

  it('answers 404 in the error envelope for an unknown id', async () => {
    const { status, body } = await call('/transactions/does-not-exist');
    expect(status).toBe(404);
    expectErrorEnvelope(body);
  });
});

describe('GET /vendings', () => {
  it('answers {data: [Vending]} with flat products by default and for products=flat', async () => {
    for (const query of ['', '?products=flat']) {
      const { status, body } = await call(`/vendings${query}`);
      expect(status).toBe(200);
      expect(Object.keys(body)).toEqual(['data']);
      expect(body.data).toHaveLength(demo.vendings.length);
      body.data.forEach(expectVending);
      body.data[0].products.forEach(expectProductLine);
    }
  });

  it('answers the planogram form for products=planogram', async () => {
    const { status, body } = await call('/vendings?products=planogram');
    expect(status).toBe(200);
    const trays = body.data[0].products.trays;
    expect(Array.isArray(trays)).toBe(true);
    expectProductLine(trays[0].slots[0].product);
  });

  it('answers 400 for a products value the service does not know', async () => {
    const { status, body } = await call('/vendings?products=cubist');
    expect(status).toBe(400);
    expectErrorEnvelope(body);
  });
});

describe('GET /vendings/{id}', () => {
  it('answers {data: Vending} in either view', async () => {
    const flat = await call(`/vendings/${vm.vendingId}`);
    expect(flat.status).toBe(200);
    expect(Object.keys(flat.body)).toEqual(['data']);
    expectVending(flat.body.data);
    expect(flat.body.data.vendingId).toBe(vm.vendingId);
    expect(flat.body.data.products).toHaveLength(vm.slots.length);
    const planogram = await call(`/vendings/${vm.vendingId}?products=planogram`);
    expect(planogram.body.data.products.trays.flatMap((t: { slots: unknown[] }) => t.slots)).toHaveLength(vm.slots.length);
  });

  it('answers 404 for an unknown vending', async () => {
    const { status, body } = await call('/vendings/nope');
    expect(status).toBe(404);
    expectErrorEnvelope(body);
  });
});

describe('PUT /transactions/{id}/payment', () => {
  const put = (id: string, body: string, key?: string | null) =>
    call(`/transactions/${id}/payment`, { method: 'PUT', body, headers: { 'content-type': 'application/json' }, key });

  it('answers an empty object and stores the payment on the transaction', async () => {
    const target = demo.transactions[5]!;
    const payment = { paymentStatus: 'captured', wallet: 'google_pay', customer: { name: 'Ana' } };
    const { status, body } = await put(target.transactionId, JSON.stringify(payment));
    expect(status).toBe(200);
    expect(body).toEqual({});
    const after = await call(`/transactions/${target.transactionId}`);
    expect(after.body.data.payment).toEqual(payment);
  });

  it('answers 400 for a body that is not a JSON object', async () => {
    for (const bad of ['not json', '[1,2]', '"text"', '42', 'null', '']) {
      const { status, body } = await put(tx.transactionId, bad);
      expect(status, bad).toBe(400);
      expectErrorEnvelope(body);
    }
  });

  it('answers 404 for an unknown transaction', async () => {
    const { status, body } = await put('nope', '{}');
    expect(status).toBe(404);
    expectErrorEnvelope(body);
  });

  it('answers 413 for a body over the limit', async () => {
    const { status, body } = await put(tx.transactionId, JSON.stringify({ blob: 'x'.repeat(1_100_000) }));
    expect(status).toBe(413);
    expectErrorEnvelope(body);
  });
});

describe('errors common to every path', () => {
  const paths = [`/transactions/${tx.transactionId}`, '/vendings', `/vendings/${vm.vendingId}`];

  it('answers 401 without a key or with an unknown one', async () => {
    for (const path of [...paths]) {
      for (const key of [null, 'wrong']) {
        const { status, body } = await call(path, { key });
        expect(status, `${path} ${key}`).toBe(401);
        expectErrorEnvelope(body);
      }
    }
    const { status } = await call(`/transactions/${tx.transactionId}/payment`, { method: 'PUT', body: '{}', key: null });
    expect(status).toBe(401);
  });

  it('accepts the key with a Bearer prefix', async () => {
    const { status } = await call('/vendings', { key: `Bearer ${TEST_KEY}` });
    expect(status).toBe(200);
  });

  it('answers 405 naming the allowed method for a wrong method', async () => {
    const cases: Array<[string, string, string]> = [
      ['POST', '/vendings', 'GET'],
      ['DELETE', `/vendings/${vm.vendingId}`, 'GET'],
      ['PUT', `/transactions/${tx.transactionId}`, 'GET'],
      ['GET', `/transactions/${tx.transactionId}/payment`, 'PUT'],
    ];
    for (const [method, path, allow] of cases) {
      const { status, body, headers } = await call(path, { method });
      expect(status, `${method} ${path}`).toBe(405);
      expect(headers.get('allow')).toBe(allow);
      expectErrorEnvelope(body);
    }
  });

  it('answers 404 in the envelope for an unknown path', async () => {
    for (const path of ['/nothing', '/vendings/a/b', '/transactions', '/dashboard/other.js']) {
      const { status, body } = await call(path);
      expect(status, path).toBe(404);
      expectErrorEnvelope(body);
    }
  });
});
