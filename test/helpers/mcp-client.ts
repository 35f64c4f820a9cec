import { request as httpRequest } from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { createDemoData } from '../../src/backends/memory/demo-data.js';
import { TEST_KEY } from './gateway.js';

/* The MCP tests' keys and clients: the official SDK's client, and raw JSON-RPC posts for the headers it would not send. */

export const READ_KEY = 'mcp-read-key';
export const PAY_KEY = 'mcp-pay-key';
export const KEYS = `${TEST_KEY},${READ_KEY}:read,${PAY_KEY}:read+pay,key-of-a:read@acct-a,key-of-b:read@acct-b`;
const [transaction] = createDemoData().transactions;
export const transactionId = transaction!.transactionId;

/** Every client `connect` made, for the test file to close once done. */
export const clients: Client[] = [];

export async function connect(url: string, key: string | undefined): Promise<Client> {
  const client = new Client({ name: 'mcp-e2e', version: '1.0.0' });
  const headers: Record<string, string> = key === undefined ? {} : { authorization: key };
  await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers } }));
  clients.push(client);
  return client;
}

export const textOf = (result: CallToolResult) => result.content.map((part) => (part.type === 'text' ? part.text : '')).join('\n');

/** POSTs one JSON-RPC message to /mcp, headers as given (Host and Origin too, which fetch would not let a test set). */
export function post(
  url: string,
  headers: Record<string, string>,
  message: unknown,
): Promise<{ status: number; headers: Record<string, unknown>; body: any }> {
  const { hostname, port } = new URL(url);
  const text = JSON.stringify(message);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: hostname,
        port,
        method: 'POST',
        path: '/mcp',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: body ? JSON.parse(body) : undefined }));
      },
    );
    req.on('error', reject);
    req.end(text);
  });
}

export const initialize = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};
