import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { ErrorCode as RpcErrorCode, McpError, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { postGraphQL } from '../helpers/graphql-client.js';
import { clients, connect, initialize, KEYS, post, READ_KEY, textOf, transactionId } from '../helpers/mcp-client.js';

/*
 * /mcp with the official SDK's client over real sockets: the tools are the
 * dashboard's operations, each call answered by the GraphQL pipeline with the
 * caller's key (its permissions, its account), and every refusal in MCP's
 * own shapes.
 */

afterAll(async () => {
  await Promise.all(clients.map((client) => client.close()));
});

describe('MCP=read', () => {
  let running: RunningGateway;
  beforeAll(async () => {
    running = await startGateway({ MCP: 'read', API_KEYS: KEYS });
  });
  afterAll(() => running.close());

  it("lists the read operations as tools, with input schemas made from their variables and the schema's words", async () => {
    const client = await connect(running.url, READ_KEY);
    // The list is the operations': it never changes while the gateway runs.
    expect(client.getServerCapabilities()).toEqual({ tools: { listChanged: false } });
    const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    expect(client.getServerVersion()).toEqual({ name: 'vending-gateway', version });
    const { tools } = await client.listTools();
    const names = tools.map((tool) => tool.name);
    expect(names).toEqual(expect.arrayContaining(['fleet_overview', 'transaction_detail', 'recent_transactions', 'transaction_stats']));
    expect(names).toEqual(expect.arrayContaining(['transaction_history', 'vending_detail', 'transactions_batch', 'vending_planogram']));
    // No subscription, and no payment unless MCP=read+pay.
    expect(names.filter((name) => name.startsWith('live_') || name.startsWith('resume_') || name.includes('payment'))).toEqual([]);
    const detail = tools.find((tool) => tool.name === 'transaction_detail')!;
    expect(detail.description).toContain('One sale with its lines and totals.');
    expect(detail.inputSchema).toMatchObject({
      type: 'object',
      required: ['id'],
      properties: { id: { type: 'string', description: 'The transactionId.' } },
    });
    expect(detail.annotations?.readOnlyHint).toBe(true);
    const fleet = tools.find((tool) => tool.name === 'fleet_overview')!;
    expect(fleet.inputSchema.properties?.filter).toMatchObject({ type: 'object', properties: { online: { type: 'boolean' } } });
  });

  it('answers a tool call with what /graphql answers the same operation, as structured content and text', async () => {
    const client = await connect(running.url, READ_KEY);
    const result = (await client.callTool({ name: 'transaction_detail', arguments: { id: transactionId } })) as CallToolResult;
    const direct = await postGraphQL(running.url, 'query($id: ID!) { transaction(id: $id) { transactionId status total } }', {
      key: READ_KEY,
      variables: { id: transactionId },
    });
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toMatchObject({ data: { transaction: direct.body.data!.transaction } });
    expect(JSON.parse(textOf(result))).toEqual((result.structuredContent as { data: unknown }).data);

    const fleet = (await client.callTool({ name: 'fleet_overview', arguments: { first: 2 } })) as CallToolResult;
    const vendings = (fleet.structuredContent as any).data.vendings;
    const all = await postGraphQL(running.url, '{ vendings { totalCount } }', { key: READ_KEY });
    expect(vendings.nodes).toHaveLength(2);
    expect(vendings.totalCount).toBe(all.body.data!.vendings.totalCount);
  });

  it("answers an unknown id, bad arguments and an unknown tool in MCP's shapes", async () => {
    const client = await connect(running.url, READ_KEY);
    const unknownId = (await client.callTool({ name: 'transaction_detail', arguments: { id: 'no-such-transaction' } })) as CallToolResult;
    expect(unknownId.isError).toBe(true);
    expect(textOf(unknownId)).toMatch(/^NOT_FOUND: /);

    const missing = (await client.callTool({ name: 'transaction_detail', arguments: {} })) as CallToolResult;
    expect(missing).toMatchObject({ isError: true });
    expect(textOf(missing)).toContain('Missing required argument(s) id');
    const extra = (await client.callTool({
      name: 'transaction_detail',
      arguments: { id: transactionId, query: '{ __schema { types { name } } }' },
    })) as CallToolResult;
    expect(extra.isError).toBe(true);
    expect(textOf(extra)).toContain('Unknown argument(s) "query"');
    const badType = (await client.callTool({ name: 'fleet_overview', arguments: { first: 'many' } })) as CallToolResult;
    expect(badType.isError).toBe(true);
    expect(textOf(badType)).toMatch(/BAD_USER_INPUT: .*\$first/);

    const error = await client.callTool({ name: 'run_graphql', arguments: {} }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(McpError);
    expect((error as McpError).code).toBe(RpcErrorCode.InvalidParams);
    expect((error as McpError).message).toContain('Unknown tool "run_graphql"');
  });

  it('refuses a request without a key with 401 in JSON-RPC, and the SDK client cannot connect', async () => {
    const answer = await post(running.url, {}, initialize);
    expect(answer.status).toBe(401);
    expect(answer.body).toMatchObject({ jsonrpc: '2.0', error: { code: -32000, data: { code: 'UNAUTHENTICATED' } }, id: null });
    // Keys only (no JWTs): there is no authorization server to point to.
    expect(answer.headers['www-authenticate']).toBeUndefined();
    await expect(connect(running.url, undefined)).rejects.toThrow();
  });

  it('keeps two accounts apart: each key sees its own account through the tools', async () => {
    const ids = { a: `mcp-a-${randomUUID()}`, b: `mcp-b-${randomUUID()}` };
    for (const [account, id] of [
      ['acct-a', ids.a],
      ['acct-b', ids.b],
    ] as const) {
      const response = await fetch(`${running.url}/webhooks/${account}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ event: 'transaction', data: { transactionId: id, status: 'pending', products: [] } }),
      });
      expect(response.status).toBe(200);
    }
    const seen = async (key: string) => {
      const client = await connect(running.url, key);
      const result = (await client.callTool({ name: 'recent_transactions', arguments: { first: 50 } })) as CallToolResult;
      expect(result.isError).toBeFalsy();
      return (result.structuredContent as any).data.recentTransactions.edges.map((edge: any) => edge.node.transactionId);
    };
    const [ofA, ofB] = await Promise.all([seen('key-of-a'), seen('key-of-b')]);
    expect(ofA).toContain(ids.a);
    expect(ofA).not.toContain(ids.b);
    expect(ofB).toContain(ids.b);
    expect(ofB).not.toContain(ids.a);
  });

  it('binds a session to the key that opened it: another key on its id is refused', async () => {
    const opened = await post(running.url, { authorization: READ_KEY }, initialize);
    expect(opened.status).toBe(200);
    const session = opened.headers['mcp-session-id'] as string;
    expect(session).toMatch(/.+/);
    const list = { jsonrpc: '2.0', id: 2, method: 'tools/list' };
    const other = await post(
      running.url,
      { authorization: 'key-of-b', 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' },
      list,
    );
    expect(other.status).toBe(403);
    expect(other.body).toMatchObject({ jsonrpc: '2.0', error: { code: -32000 } });
    expect(other.body.error.message).toContain('another key or token');
    const unknown = await post(
      running.url,
      { authorization: READ_KEY, 'mcp-session-id': randomUUID(), 'mcp-protocol-version': '2025-06-18' },
      list,
    );
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ error: { code: -32001 } });
  });

  it('counts open sessions, and a session ended by its client (DELETE) is gone', async () => {
    const open = async () => Number(/^vending_gateway_mcp_sessions (\d+)/m.exec(await (await fetch(`${running.url}/metrics`)).text())?.[1]);
    const before = await open();
    const opened = await post(running.url, { authorization: READ_KEY }, initialize);
    const session = opened.headers['mcp-session-id'] as string;
    expect(await open()).toBe(before + 1);
    const headers = { authorization: READ_KEY, 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' };
    const byOther = await fetch(`${running.url}/mcp`, { method: 'DELETE', headers: { ...headers, authorization: 'key-of-b' } });
    expect(byOther.status).toBe(403);
    const ended = await fetch(`${running.url}/mcp`, { method: 'DELETE', headers });
    expect(ended.status).toBe(200);
    expect(await open()).toBe(before);
    const after = await post(running.url, headers, { jsonrpc: '2.0', id: 2, method: 'tools/list' });
    expect(after.status).toBe(404);
  });

  it('refuses a Host or an Origin of another site (DNS rebinding), and takes loopback names', async () => {
    const { port } = new URL(running.url);
    const evilHost = await post(running.url, { authorization: READ_KEY, host: `evil.example.com:${port}` }, initialize);
    expect(evilHost.status).toBe(403);
    expect(evilHost.body).toMatchObject({ jsonrpc: '2.0', error: { data: { code: 'FORBIDDEN' } } });
    const evilOrigin = await post(running.url, { authorization: READ_KEY, origin: 'http://evil.example.com' }, initialize);
    expect(evilOrigin.status).toBe(403);
    const local = await post(
      running.url,
      { authorization: READ_KEY, host: `localhost:${port}`, origin: `http://localhost:${port}` },
      initialize,
    );
    expect(local.status).toBe(200);
  });

  it('answers a message that is no JSON, and a request outside a session, with JSON-RPC errors', async () => {
    const notJson = await fetch(`${running.url}/mcp`, {
      method: 'POST',
      headers: { authorization: READ_KEY, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: '{nope',
    });
    expect(notJson.status).toBe(400);
    expect(await notJson.json()).toMatchObject({ error: { code: -32700 } });
    const outside = await post(running.url, { authorization: READ_KEY }, { jsonrpc: '2.0', id: 3, method: 'tools/list' });
    expect(outside.status).toBe(400);
    expect(outside.body).toMatchObject({ jsonrpc: '2.0', error: { code: -32000 } });
    const get = await fetch(`${running.url}/mcp`, { headers: { authorization: READ_KEY, accept: 'text/event-stream' } });
    expect(get.status).toBe(405);
    const tooLarge = await fetch(`${running.url}/mcp`, {
      method: 'POST',
      headers: { authorization: READ_KEY, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ ...initialize, padding: 'x'.repeat(1_100_000) }),
    });
    expect(tooLarge.status).toBe(413);
    expect(await tooLarge.json()).toMatchObject({ jsonrpc: '2.0', error: { code: -32000, data: { code: 'BAD_USER_INPUT' } }, id: null });
  });
});
