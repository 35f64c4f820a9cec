import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDemoData } from '../../src/backends/memory/demo-data.js';
import { buildWebhookRequest } from '../../src/events/webhook-request.js';
import { answeringGateway, type RunningGateway } from '../helpers/gateway.js';
import { codesOf, postGraphQL } from '../helpers/graphql-client.js';

/*
 * What a document's first runs leave behind (its parse and validation
 * cached, its compiled code, its cost known to pass) must not let a later
 * request skip a rule that depends on the request: each document is first
 * sent three times by a key that may run it (interpreted, then compiled),
 * then by the key under test.
 */

const PAYER = 'payer-key';
const READER = 'reader-key';
const TILL = 'till-key';
const OF_A = 'key-of-a';
const OF_B = 'key-of-b';
const [first, second] = createDemoData().transactions;

const PAY =
  'mutation Pay($id: ID!, $p: JSONObject!) { updateTransactionPayment(transactionId: $id, payment: $p) ' +
  '{ transaction { transactionId extra } } }';
const READ = 'query One($id: ID!) { transaction(id: $id) { transactionId status } }';
const RECENT = 'query Recent { recentTransactions(first: 20) { edges { node { transactionId } } } }';
const BATCH = 'query Batch($ids: [ID!]!) { transactions(ids: $ids) { transactionId status products { productId productName quantity } } }';

let running: RunningGateway;
beforeAll(async () => {
  running = await answeringGateway({
    API_KEYS: `${PAYER}:read+pay, ${READER}:read, ${TILL}:pay, ${OF_A}:read@acct-a, ${OF_B}:read@acct-b`,
    MAX_COST: '400',
  });
});
afterAll(() => running.close());

async function sentBefore(query: string, key: string, variables?: Record<string, unknown>): Promise<void> {
  for (let n = 0; n < 3; n += 1) expect(codesOf(await postGraphQL(running, query, { key, variables }))).toEqual([]);
}

describe('a request for a document another key sent three times before', () => {
  it('needs its own permission: a read-only key cannot run that payment, which then is not made', async () => {
    await sentBefore(PAY, PAYER, { id: first!.transactionId, p: { by: 'payer' } });
    const refused = await postGraphQL(running, PAY, { key: READER, variables: { id: first!.transactionId, p: { by: 'reader' } } });
    expect(codesOf(refused)).toEqual(['FORBIDDEN']);
    expect(refused.body.data ?? null).toBeNull();
    const read = await postGraphQL(running, 'query ($id: ID!) { transaction(id: $id) { extra } }', {
      key: PAYER,
      variables: { id: first!.transactionId },
    });
    expect((read.body.data as { transaction: { extra: { payment: unknown } } }).transaction.extra.payment).toEqual({ by: 'payer' });
  });

  it('needs its own permission: a pay-only key cannot run that read', async () => {
    await sentBefore(READ, READER, { id: second!.transactionId });
    const refused = await postGraphQL(running, READ, { key: TILL, variables: { id: second!.transactionId } });
    expect(codesOf(refused)).toEqual(['FORBIDDEN']);
    expect(refused.body.data ?? null).toBeNull();
  });

  it("reads its own account's history, not the account of the key that sent it before", async () => {
    for (const [account, id] of [
      ['acct-a', 'only-in-a'],
      ['acct-b', 'only-in-b'],
    ]) {
      const request = buildWebhookRequest({ form: 'legacy', transaction: { transactionId: id!, status: 'pending', products: [] } });
      expect(
        (await running.fetch(`${running.url}/webhooks/${account}`, { method: 'POST', headers: request.headers, body: request.body }))
          .status,
      ).toBe(200);
    }
    const idsOf = async (key: string) =>
      (
        (await postGraphQL(running, RECENT, { key })).body.data as {
          recentTransactions: { edges: Array<{ node: { transactionId: string } }> };
        }
      ).recentTransactions.edges.map((e) => e.node.transactionId);
    await sentBefore(RECENT, OF_A);
    expect(await idsOf(OF_A)).toEqual(['only-in-a']);
    expect(await idsOf(OF_B)).toEqual(['only-in-b']);
  });

  it('is counted with its own variables: that batch with more ids than MAX_COST allows is refused as yoga refuses it', async () => {
    const ids = (n: number) => Array.from({ length: n }, () => first!.transactionId);
    await sentBefore(BATCH, READER, { ids: ids(2) });
    const refused = await postGraphQL(running, BATCH, { key: READER, variables: { ids: ids(200) } });
    expect(refused.status).toBe(400);
    expect(codesOf(refused)).toEqual(['BAD_USER_INPUT']);
    expect(refused.body.errors?.[0]?.message).toContain('MAX_COST');
  });

  it("has its variables judged: that read with a wrong variable is refused in graphql-js's words", async () => {
    await sentBefore(READ, READER, { id: second!.transactionId });
    const refused = await postGraphQL(running, READ, { key: READER, variables: { id: { nested: true } } });
    expect(codesOf(refused)).toEqual(['BAD_USER_INPUT']);
    expect(refused.body.errors?.[0]?.message).toMatch(/^Variable "\$id" got invalid value/);
  });

  it("is counted in the metrics under its document's operation name, as yoga's path counts it", async () => {
    const named = 'query PlannedRead($id: ID!) { transaction(id: $id) { status } }';
    await sentBefore(named, READER, { id: second!.transactionId });
    expect(codesOf(await postGraphQL(running, named, { key: READER, variables: { id: second!.transactionId } }))).toEqual([]);
    const metrics = await (await running.fetch(`${running.url}/metrics`)).text();
    expect(metrics).toMatch(/vending_gateway_requests_total\{transport="graphql",operation="PlannedRead",outcome="2xx"\} 4\b/);
  });
});
