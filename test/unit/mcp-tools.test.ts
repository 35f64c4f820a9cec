import { readFileSync } from 'node:fs';
import { buildSchema, parse, type OperationDefinitionNode } from 'graphql';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { schema } from '../../src/graphql/schema.js';
import { inputSchemaOf } from '../../src/mcp/input-schema.js';
import { createSessionServer } from '../../src/mcp/mcp-server.js';
import { createMcpSessions, type McpSession } from '../../src/mcp/mcp-sessions.js';
import { newScope } from '../../src/http/request-scope.js';
import { loadOperationTools } from '../../src/mcp/operation-tools.js';
import { argumentsProblem, toolResultOf } from '../../src/mcp/tool-calls.js';
import { allowedHostnames, hostProblem } from '../../src/mcp/allowed-hosts.js';

/* The parts of /mcp that are pure: tools made from the operations, arguments and results, hosts, the session table. */

const allTools = () => loadOperationTools(schema);

describe('tools from schema/operations/', () => {
  const tools = loadOperationTools(schema);
  const manifest = Object.keys(
    JSON.parse(readFileSync(new URL('../../schema/persisted-documents.json', import.meta.url), 'utf8')) as object,
  );

  it('makes each query and mutation of the trusted documents a tool, never a subscription, named by its hash', () => {
    expect(tools.map((tool) => tool.kind).sort()).toContain('mutation');
    for (const tool of tools) expect(manifest).toContain(tool.hash);
    expect(tools.some((tool) => /^(live|resume)_/.test(tool.name))).toBe(false);
    expect(new Set(tools.map((tool) => tool.name)).size).toBe(tools.length);
  });

  it('types variables from the schema: lists, enums, input objects, defaults, required non-nulls', () => {
    const small = buildSchema(`
      "How wide" enum Width { NARROW WIDE }
      input Box { "its side" side: Int! label: String = "x" }
      type Query { things("which ones" ids: [ID!]!, width: Width, box: Box): Int }
    `);
    const operation = parse('query Q($ids: [ID!]!, $width: Width = WIDE, $box: Box) { things(ids: $ids, width: $width, box: $box) }')
      .definitions[0] as OperationDefinitionNode;
    expect(inputSchemaOf(small, operation)).toEqual({
      type: 'object',
      properties: {
        ids: { type: 'array', items: { type: 'string' }, description: 'which ones' },
        width: { type: 'string', enum: ['NARROW', 'WIDE'], description: 'How wide', default: 'WIDE' },
        box: {
          type: 'object',
          properties: { side: { type: 'integer', description: 'its side' }, label: { type: 'string', default: 'x' } },
          required: ['side'],
          additionalProperties: false,
        },
      },
      required: ['ids'],
      additionalProperties: false,
    });
  });

  it('names unknown and missing arguments, and leaves types to GraphQL', () => {
    const detail = tools.find((tool) => tool.name === 'transaction_detail')!;
    expect(argumentsProblem(detail, { id: 'a' })).toBeUndefined();
    expect(argumentsProblem(detail, { id: 7 })).toBeUndefined();
    expect(argumentsProblem(detail, {})).toBe('Missing required argument(s) id for tool transaction_detail');
    expect(argumentsProblem(detail, { id: 'a', sql: 'drop' })).toBe('Unknown argument(s) "sql" for tool transaction_detail; it takes id');
  });
});

describe('a GraphQL result as a tool result', () => {
  it('is data as structured content and JSON text, an error with each code first when it carries errors', () => {
    expect(toolResultOf({ data: { a: 1 } })).toEqual({
      structuredContent: { data: { a: 1 } },
      content: [{ type: 'text', text: '{"a":1}' }],
    });
    expect(toolResultOf({ data: { a: null }, errors: [{ message: 'gone', extensions: { code: 'NOT_FOUND' } }] })).toEqual({
      isError: true,
      structuredContent: { data: { a: null }, errors: [{ message: 'gone', code: 'NOT_FOUND' }] },
      content: [{ type: 'text', text: 'NOT_FOUND: gone\n{"a":null}' }],
    });
  });
});

describe('a tool call that fails unexpectedly', () => {
  it('is a tool error in the masked words, its text only in the log', async () => {
    const logged: unknown[] = [];
    const log = { error: (...args: unknown[]) => void logged.push(args) } as never;
    const server = createSessionServer(allTools(), () => Promise.reject(new Error('pool exhausted at 10.0.0.7')), '1.0.0');
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    // What the route hands the server with each request: the request's scope, as authInfo's extra.
    const send = clientSide.send.bind(clientSide);
    const authInfo = { token: 'k', clientId: 'c', scopes: [], extra: { scope: newScope('r1', log, 1) } };
    clientSide.send = (message, options) => send(message, { ...options, authInfo });
    await server.connect(serverSide);
    const client = new Client({ name: 'unit', version: '1' });
    await client.connect(clientSide);
    const result = (await client.callTool({ name: 'fleet_overview', arguments: {} })) as CallToolResult;
    expect(result).toEqual({ isError: true, content: [{ type: 'text', text: 'Unexpected error.' }] });
    expect(JSON.stringify(logged)).toContain('fleet_overview');
    await client.close();
  });
});

describe('allowed hosts', () => {
  const allowed = allowedHostnames({ listenHost: '0.0.0.0', extra: ['gateway.example.com'] });
  it('takes loopback and listed names on any port, and an Origin only of those', () => {
    expect(hostProblem(allowed, 'localhost:4000', undefined)).toBeUndefined();
    expect(hostProblem(allowed, '[::1]:4000', 'http://127.0.0.1:4000')).toBeUndefined();
    expect(hostProblem(allowed, 'GATEWAY.example.com', 'https://gateway.example.com')).toBeUndefined();
    expect(hostProblem(allowed, 'evil.example.com', undefined)).toMatchObject({ message: expect.stringMatching(/Host/) as unknown });
    expect(hostProblem(allowed, undefined, undefined)).toMatchObject({ message: expect.stringMatching(/Host/) as unknown });
    expect(hostProblem(allowed, 'localhost', 'http://evil.example.com')).toMatchObject({
      message: expect.stringMatching(/Origin/) as unknown,
    });
    expect(hostProblem(allowed, 'localhost', 'null')).toMatchObject({ message: expect.stringMatching(/Origin/) as unknown });
    expect(allowedHostnames({ listenHost: '10.0.0.5', extra: [] }).has('10.0.0.5')).toBe(true);
    expect(allowedHostnames({ listenHost: '0.0.0.0', extra: [] }).has('0.0.0.0')).toBe(false);
  });
});

describe('the session table', () => {
  const session = (closed: string[], id: string, owner = id): McpSession => ({
    owner,
    lastUsed: 0,
    close: async () => void closed.push(id),
  });

  it('closes the least recently used past its bound, and sessions idle past the idle time', async () => {
    let now = 1_000;
    const closed: string[] = [];
    const sessions = createMcpSessions({ max: 2, perOwner: 2, idleMs: 100, now: () => now });
    sessions.add('a', session(closed, 'a'));
    sessions.add('b', session(closed, 'b'));
    now += 10;
    expect(sessions.use('a', 'a')).toMatchObject({ owner: 'a' });
    sessions.add('c', session(closed, 'c'));
    expect(closed).toEqual(['b']);
    expect(sessions.use('b', 'b')).toBeUndefined();
    now += 40;
    expect(sessions.use('c', 'c')).toMatchObject({ owner: 'c' });
    now += 65;
    await sessions.sweep();
    expect(closed).toEqual(['b', 'a']);
    expect(sessions.size).toBe(1);
    now += 40;
    expect(sessions.use('c', 'c')).toBeUndefined();
    expect(closed).toEqual(['b', 'a', 'c']);
    await sessions.closeAll();
    expect(sessions.size).toBe(0);
  });

  it("gives a session only to its owner, whose use alone keeps it, and closes an owner's oldest past its share", async () => {
    let now = 1_000;
    const closed: string[] = [];
    const sessions = createMcpSessions({ max: 10, perOwner: 2, idleMs: 100, now: () => now });
    sessions.add('other', session(closed, 'other', 'B'));
    for (const id of ['a1', 'a2', 'a3']) sessions.add(id, session(closed, id, 'A'));
    // A's third session closed A's first, not B's.
    expect(closed).toEqual(['a1']);
    now += 90;
    expect(sessions.use('other', 'A')).toBe('another-owner');
    now += 20;
    // Another owner's attempt did not keep it alive.
    expect(sessions.use('other', 'B')).toBeUndefined();
    expect(closed).toEqual(['a1', 'other']);
  });
});
