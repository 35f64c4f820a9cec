import { MASKED_MESSAGE } from '../errors.js';

/*
 * The one answer to an unexpected failure, on every route: its text and stack
 * go to the log, never to the client (unexpected errors are
 * masked). Each route words it (errors.ts's MASKED_MESSAGE) in its own envelope.
 */

/** How a route words errors: the REST contract's (part 7), GraphQL's, or JSON-RPC's (MCP, `/mcp`). */
export type Envelope = 'rest' | 'graphql' | 'jsonrpc';

/**
 * JSON-RPC 2.0's error codes the front door answers with: an HTTP refusal is
 * "server error" (-32000, as MCP's SDK answers its own), a masked failure "internal error".
 */
const JSON_RPC_SERVER_ERROR = -32000;
const JSON_RPC_INTERNAL_ERROR = -32603;

/** An error's body in the route's envelope; `code` is the catalogue's (errors.ts), carried as GraphQL's `extensions.code` or JSON-RPC's `data.code`. */
export function errorBody(envelope: Envelope, message: string, code?: string): unknown {
  if (envelope === 'graphql') return { errors: [{ message, ...(code ? { extensions: { code } } : {}) }] };
  if (envelope === 'jsonrpc') {
    const rpcCode = message === MASKED_MESSAGE ? JSON_RPC_INTERNAL_ERROR : JSON_RPC_SERVER_ERROR;
    // `id` null: the front door answers before (or without) reading which request the body held.
    return { jsonrpc: '2.0', error: { code: rpcCode, message, ...(code ? { data: { code } } : {}) }, id: null };
  }
  return { errors: { message } };
}

export function maskedAnswer(envelope: Envelope): { status: 500; body: unknown } {
  return { status: 500, body: errorBody(envelope, MASKED_MESSAGE) };
}
