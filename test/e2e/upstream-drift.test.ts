import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDriftReport } from '../../src/backends/rest/drift-report.js';
import { startGateway, TEST_KEY, type RunningGateway } from '../helpers/gateway.js';
import { postGraphQL } from '../helpers/graphql-client.js';
import { startStandInUpstream, type StandInUpstream } from '../helpers/stand-in-upstream.js';

/*
 * A service that sends a transaction without `status`, with its price and
 * quantity as text: REST passes it through, GraphQL converts what converts
 * losslessly and answers an error on `status` alone, and the drift is counted.
 */
const KEY = 'upstream-key';
let upstream: StandInUpstream;
let gateway: RunningGateway;

beforeAll(async () => {
  upstream = await startStandInUpstream({ keys: [KEY] });
  gateway = await startGateway({ BACKEND: 'rest', UPSTREAM_URL: upstream.url, UPSTREAM_API_KEY: KEY });
  const tx = upstream.transactions[1] as Record<string, unknown>;
  delete tx.status;
  tx.products = [{ ...(tx.products as Array<Record<string, unknown>>)[0], productPrice: '2.50', quantity: '2' }];
});
afterAll(async () => {
  await gateway.close();
  await upstream.close();
});

const id = () => upstream.transactions[1]!.transactionId as string;

describe('a transaction the service sent otherwise than the contract shows', () => {
  it('is passed through REST as the service sent it', async () => {
    const direct = await (await fetch(`${upstream.url}/transactions/${id()}`, { headers: { authorization: KEY } })).text();
    const through = await fetch(`${gateway.url}/transactions/${id()}`, { headers: { authorization: TEST_KEY } });
    expect(through.status).toBe(200);
    expect(await through.text()).toBe(direct);
  });

  it('is served by GraphQL: text numbers converted, the missing status an error of its own', async () => {
    const served = await postGraphQL(
      gateway.url,
      `{ transaction(id: "${id()}") { transactionId total products { productPrice quantity lineTotal } } }`,
    );
    expect(served.body.errors).toBeUndefined();
    expect(served.body.data!.transaction).toEqual({
      transactionId: id(),
      total: 5,
      products: [{ productPrice: 2.5, quantity: 2, lineTotal: 5 }],
    });

    const status = await postGraphQL(gateway.url, `{ transaction(id: "${id()}") { status } }`);
    expect(status.body.errors).toEqual([
      expect.objectContaining({
        message: 'The service sent this transaction without status',
        path: ['transaction', 'status'],
        extensions: expect.objectContaining({ code: 'UPSTREAM_ERROR' }),
      }),
    ]);
  });

  it('is counted as drift, by resource, field and kind', async () => {
    const metrics = await (await fetch(`${gateway.url}/metrics`)).text();
    expect(metrics).toMatch(/vending_gateway_upstream_contract_drift_total\{resource="transaction",field="status",kind="missing"\} [1-9]/);
    expect(metrics).toMatch(
      /vending_gateway_upstream_contract_drift_total\{resource="product_line",field="productPrice",kind="converted"\} [1-9]/,
    );
    expect(metrics).toMatch(
      /vending_gateway_upstream_contract_drift_total\{resource="product_line",field="quantity",kind="converted"\} [1-9]/,
    );
  });
});

describe('the drift report', () => {
  it('counts every drift and warns of each kind at most once a minute', () => {
    let now = 0;
    const counted: string[] = [];
    const warned: string[] = [];
    const report = createDriftReport({
      count: (d) => counted.push(d.field),
      warn: (d) => warned.push(`${d.field}:${d.kind}`),
      now: () => now,
    });
    const status = { resource: 'transaction', field: 'status', kind: 'missing', sent: 'undefined', expected: 'string' } as const;
    const price = { resource: 'product_line', field: 'productPrice', kind: 'converted', sent: 'string', expected: 'number' } as const;
    report([status, price], '/transactions/{id}');
    now = 59_999;
    report([status], '/transactions/{id}');
    expect(warned).toEqual(['status:missing', 'productPrice:converted']);
    now = 60_000;
    report([status, { ...status, kind: 'wrong_type' }], '/transactions/{id}');
    expect(warned).toEqual(['status:missing', 'productPrice:converted', 'status:missing', 'status:wrong_type']);
    expect(counted).toHaveLength(5);
  });
});
