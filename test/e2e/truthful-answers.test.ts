import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startForwardGateway, startGateway, TEST_KEY, type RunningGateway } from '../helpers/gateway.js';
import { postGraphQL } from '../helpers/graphql-client.js';
import { startStandInUpstream, type StandInUpstream } from '../helpers/stand-in-upstream.js';

/*
 * Answers that say what happened: an outage of the service is an outage
 * (not "too many key checks"), readiness names the service refusing the
 * gateway's own key, and paying is not reading.
 */
const KEY = 'upstream-key';
let upstream: StandInUpstream;
const gateways: RunningGateway[] = [];

beforeAll(async () => {
  upstream = await startStandInUpstream({ keys: [KEY] });
});
afterEach(async () => {
  upstream.clearFaults();
  await Promise.all(gateways.splice(0).map((gateway) => gateway.close()));
});
afterAll(() => upstream.close());

const started = async (gateway: Promise<RunningGateway>) => {
  const running = await gateway;
  gateways.push(running);
  return running;
};

describe('forward mode during an outage of the service', () => {
  it('answers every valid key UPSTREAM_* 5xx, never RATE_LIMITED for the key checks that failed', async () => {
    const gateway = await started(startForwardGateway(upstream.url));
    upstream.injectFault({ kind: 'status', status: 502, body: '{"errors":{"message":"bad gateway"}}' }, { method: 'GET', times: 10_000 });
    const statuses: number[] = [];
    const codes = new Set<string>();
    for (let i = 0; i < 40; i++) {
      const response = await fetch(`${gateway.url}/transactions/${upstream.transactions[0]!.transactionId as string}`, {
        headers: { authorization: KEY },
      });
      statuses.push(response.status);
      const { errors } = (await response.json()) as { errors: { message: string } };
      expect(errors.message).not.toMatch(/Too many API key checks/);
      const graphql = await postGraphQL(gateway.url, '{ vendings { totalCount } }', { key: KEY });
      for (const error of graphql.body.errors ?? []) codes.add(error.extensions?.code ?? '');
    }
    expect(statuses.filter((status) => status === 429)).toEqual([]);
    expect(new Set(statuses)).toEqual(new Set([502]));
    expect(codes.has('RATE_LIMITED')).toBe(false);
    expect([...codes].every((code) => code.startsWith('UPSTREAM_'))).toBe(true);
  });
});

describe("readiness and the gateway's own key", () => {
  it('fails, naming the check, while the service refuses UPSTREAM_API_KEY, and recovers once it takes it', async () => {
    const gateway = await started(startGateway({ BACKEND: 'rest', UPSTREAM_URL: upstream.url, UPSTREAM_API_KEY: 'revoked-key' }));
    const ready = async () => {
      const response = await fetch(`${gateway.url}/readyz`);
      return { status: response.status, body: (await response.json()) as { checks: Record<string, boolean> } };
    };
    expect((await ready()).status).toBe(200);
    const refused = await fetch(`${gateway.url}/vendings`, { headers: { authorization: TEST_KEY } });
    expect(refused.status).toBe(502);
    const notReady = await ready();
    expect(notReady.status).toBe(503);
    expect(notReady.body.checks.upstream_key).toBe(false);

    upstream.keys.add('revoked-key');
    // The gateway asks the service again by itself every few seconds while refused.
    for (const deadline = Date.now() + 30_000; (await ready()).status !== 200 && Date.now() < deadline;)
      await new Promise((resolve) => setTimeout(resolve, 100));
    expect((await ready()).body.checks.upstream_key).toBe(true);
  }, 60_000);
});

describe('a key that may pay but not read', () => {
  it("gets no transaction in the payment mutation's payload", async () => {
    const gateway = await started(startGateway({ API_KEYS: `${TEST_KEY},payer-key:pay` }));
    const { body } = await postGraphQL(
      gateway.url,
      'mutation { updateTransactionPayment(transactionId: "e96a1bb8-6da9-49e4-9881-15f7e15d33a3", ' +
        'payment: { paymentStatus: "captured" }) { transaction { transactionId status extra } } }',
      { key: 'payer-key' },
    );
    expect(body.data).toEqual({ updateTransactionPayment: { transaction: null } });
    expect(body.errors).toEqual([
      expect.objectContaining({
        path: ['updateTransactionPayment', 'transaction'],
        extensions: expect.objectContaining({ code: 'FORBIDDEN' }),
      }),
    ]);

    const reader = await postGraphQL(
      gateway.url,
      'mutation { updateTransactionPayment(transactionId: "e96a1bb8-6da9-49e4-9881-15f7e15d33a3", ' +
        'payment: { paymentStatus: "captured" }) { transaction { transactionId } } }',
      { key: TEST_KEY },
    );
    expect(reader.body.data).toEqual({
      updateTransactionPayment: { transaction: { transactionId: 'e96a1bb8-6da9-49e4-9881-15f7e15d33a3' } },
    });
  });
});
