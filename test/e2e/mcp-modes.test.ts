import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { postGraphQL } from '../helpers/graphql-client.js';
import { clients, connect, initialize, KEYS, PAY_KEY, post, READ_KEY, textOf, transactionId } from '../helpers/mcp-client.js';

/* /mcp in each mode of MCP and beside TRUSTED_DOCUMENTS=only, and at shutdown. */

afterAll(async () => {
  await Promise.all(clients.map((client) => client.close()));
});

describe('MCP=read+pay', () => {
  let running: RunningGateway;
  beforeAll(async () => {
    running = await startGateway({ MCP: 'read+pay', API_KEYS: KEYS });
  });
  afterAll(() => running.close());

  it('offers the payment tool, which a read key is refused by the permission rules and a pay key may call', async () => {
    const reader = await connect(running.url, READ_KEY);
    const { tools } = await reader.listTools();
    const pay = tools.find((tool) => tool.name === 'update_transaction_payment');
    expect(pay?.inputSchema.required).toEqual(['transactionId', 'payment']);
    expect(pay?.annotations?.readOnlyHint).toBe(false);
    const args = { transactionId, payment: { status: 'paid', reference: 'mcp-test' } };
    const refused = (await reader.callTool({ name: 'update_transaction_payment', arguments: args })) as CallToolResult;
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toContain('FORBIDDEN: This API key or token lacks the "pay" permission');

    const payer = await connect(running.url, PAY_KEY);
    const paid = (await payer.callTool({ name: 'update_transaction_payment', arguments: args })) as CallToolResult;
    expect(paid.isError).toBeFalsy();
    expect(paid.structuredContent).toMatchObject({ data: { updateTransactionPayment: { transaction: { transactionId } } } });
  });
});

describe('MCP=read with TRUSTED_DOCUMENTS=only', () => {
  let running: RunningGateway;
  beforeAll(async () => {
    running = await startGateway({ MCP: 'read', TRUSTED_DOCUMENTS: 'only', API_KEYS: KEYS });
  });
  afterAll(() => running.close());

  it('names each document by its hash, as the dashboard does, where no text is accepted', async () => {
    const client = await connect(running.url, READ_KEY);
    const result = (await client.callTool({ name: 'transaction_detail', arguments: { id: transactionId } })) as CallToolResult;
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toMatchObject({ data: { transaction: { transactionId } } });
    // The same operation sent as text over /graphql is refused there: the tool did not send its text.
    const direct = await postGraphQL(running.url, '{ vendings { totalCount } }', { key: READ_KEY });
    expect(direct.body.errors?.[0]?.extensions?.code).toBe('PERSISTED_QUERY_ONLY');
  });
});

describe('a stopping gateway', () => {
  it('closes the MCP sessions it holds', async () => {
    const running = await startGateway({ MCP: 'read', API_KEYS: KEYS });
    const sessions = async () => Number(/^vending_gateway_mcp_sessions (\d+)/m.exec(await running.gateway.app.metrics.render())?.[1]);
    try {
      await Promise.all([connect(running.url, READ_KEY), connect(running.url, PAY_KEY)]);
      expect(await sessions()).toBe(2);
    } finally {
      await running.close();
    }
    expect(await sessions()).toBe(0);
  });
});

describe('MCP=off (the default)', () => {
  let running: RunningGateway;
  beforeAll(async () => {
    running = await startGateway({ API_KEYS: KEYS });
  });
  afterAll(() => running.close());

  it('answers /mcp with 404', async () => {
    const answer = await post(running.url, { authorization: READ_KEY }, initialize);
    expect(answer.status).toBe(404);
  });
});
