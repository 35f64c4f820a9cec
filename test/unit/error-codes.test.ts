import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES, ErrorCode, httpStatusOf } from '../../src/errors.js';

/*
 * Every code a client can receive is in the catalogue of src/errors.ts, and
 * the rest of src/ names it as `ErrorCode.NAME`: a code written as text
 * elsewhere could drift from the catalogue (a typo is a new code no client
 * knows) and escapes the type checker where it is compared.
 */

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'generated' ? [] : sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

// Quotes only: a code in backticks is a comment's or a doc's code span.
const quotedCode = new RegExp(`(['"])(${ERROR_CODES.join('|')})\\1`);
/** A code set or compared as text, whether or not the catalogue has it. */
const codeAsText = [
  /\bcode\s*:\s*['"][A-Z][A-Z0-9_]*['"]/,
  /extensions\??\.code\s*[!=]==?\s*['"]/,
  /['"][A-Z][A-Z0-9_]*['"]\s*[!=]==?\s*[\w?.]*extensions\??\.code\b/,
];

/** `file:line: text` for each line of `text` that writes an error code as a string. */
function codeLiterals(file: string, text: string): string[] {
  return text
    .split('\n')
    .flatMap((line, index) =>
      quotedCode.test(line) || codeAsText.some((pattern) => pattern.test(line)) ? [`${file}:${index + 1}: ${line.trim()}`] : [],
    );
}

/** The one module that words refusals: every GatewayError is built there, beside its code. */
const CATALOGUE = join('refusals', 'refusals.ts');
const constructs = /\bnew\s+GatewayError\s*\(/;

/** `file:line: text` for each line of `text` that constructs a GatewayError (a refusal worded at its call site). */
function constructions(file: string, text: string): string[] {
  return text.split('\n').flatMap((line, index) => (constructs.test(line) ? [`${file}:${index + 1}: ${line.trim()}`] : []));
}

/*
 * A client reads a refusal's message, and tests and clients match it as
 * text: src/refusals/refusals.ts words each one once, and call sites pass
 * only what varies. A `new GatewayError(` anywhere else would word one at
 * its call site again.
 */
describe('refusals', () => {
  it('are constructed nowhere in src/ but the catalogue', () => {
    const found = sourceFiles(SRC)
      .map((path) => relative(SRC, path))
      .filter((file) => file !== CATALOGUE)
      .flatMap((file) => constructions(`src/${file}`, readFileSync(join(SRC, file), 'utf8')));
    expect(found).toEqual([]);
  });

  it('are caught when constructed elsewhere, with their file and line', () => {
    const probe = [
      "import { ErrorCode, GatewayError } from '../errors.js';",
      "export const a = () => new GatewayError(ErrorCode.FORBIDDEN, 'No');",
      'export const b = (message: string) =>',
      '  new GatewayError(',
      '    ErrorCode.BAD_USER_INPUT,',
      '    message,',
      '  );',
      'export const c = refuse.notFound("vending", "v1");',
    ].join('\n');
    expect(constructions('src/probe.ts', probe)).toEqual([
      "src/probe.ts:2: export const a = () => new GatewayError(ErrorCode.FORBIDDEN, 'No');",
      'src/probe.ts:4: new GatewayError(',
    ]);
  });
});

/** The folder of the catalogue's wording: refusals.ts, operation-refusals.ts, transport-refusals.ts, ws-close-codes.ts. */
const WORDING = `refusals${sep}`;

/**
 * A message a client reads, written as text where it is sent: the first
 * argument of a GraphQLError, the message of a REST or JSON-RPC envelope,
 * a WebSocket close reason, an MCP tool error, a text/plain answer. A
 * message the call site passes on (a library's or a validator's words, an
 * entry of the catalogue) is a name, not text, and passes.
 */
const wordedAtCallSite: Array<[string, RegExp]> = [
  ['a GraphQLError', /\bnew\s+GraphQLError\s*\(\s*['"`]/g],
  ['an McpError', /\bnew\s+McpError\s*\([^,()]*,\s*['"`]/g],
  ['a REST envelope', /\berrorEnvelope\s*\(\s*['"`]/g],
  ['an envelope of the route', /\berrorBody\s*\([^,()]*,\s*['"`]/g],
  ['an envelope written out', /\berrors:\s*\[?\s*\{\s*message:\s*['"`]/g],
  ['a JSON-RPC error', /\brpcError\s*\((?:[^,()]*,\s*){3}['"`]/g],
  ['a tool error', /\btoolError\s*\(\s*['"`]/g],
  ['a close reason', /\.close\(\s*[^,()]+,\s*['"`]/g],
  // Quotes only: a template literal sent is a frame of a protocol (graphql-ws's `next`), not words.
  ['a text answer', /\.send\(\s*['"]/g],
];

/** `file:line: what` for each message `text` words at its call site. */
function messagesWorded(file: string, text: string): string[] {
  return wordedAtCallSite.flatMap(([what, pattern]) =>
    [...text.matchAll(pattern)].map((match) => `${file}:${text.slice(0, match.index).split('\n').length}: ${what}`),
  );
}

/*
 * The same holds for the messages that come with no GatewayError (GraphQL's
 * own errors, transport envelopes, close reasons, tool errors): src/refusals/
 * words each once, and call sites pass only what varies. No call site needs
 * an exception: the GraphQLErrors built elsewhere pass on a library's words
 * as it wrote them (graphql-js's in without-suggestion.ts and the query
 * limits' shaping, graphql-jit's in use-compiled-execution.ts, yoga's in
 * the parser echo's, Apollo's APQ plugin's in persisted-queries.ts).
 */
describe('client-visible messages', () => {
  it('are worded nowhere in src/ but the catalogue', () => {
    const found = sourceFiles(SRC)
      .map((path) => relative(SRC, path))
      .filter((file) => !file.startsWith(WORDING))
      .flatMap((file) => messagesWorded(`src/${file}`, readFileSync(join(SRC, file), 'utf8')));
    expect(found).toEqual([]);
  });

  it('are caught when worded at a call site, with their file and line', () => {
    const probe = [
      "const a = new GraphQLError('No', { extensions: {} });",
      'const b = new GraphQLError(',
      '  `At most ${max}`,',
      ');',
      "reply.code(404).send(errorEnvelope('No such thing'));",
      "reply.send(errorBody(envelope, 'No', ErrorCode.BAD_REQUEST));",
      "reply.send({ errors: { message: 'No' } });",
      "rpcError(reply, 400, RPC.parseError, 'Parse error');",
      'throw new McpError(RpcErrorCode.InvalidParams, `Unknown tool ${name}`);',
      "return toolError('No');",
      "socket.close(1013, 'Later');",
      "reply.code(404).header('content-type', 'text/plain').send('No');",
      'const fine = [new GraphQLError(error.message), errorEnvelope(refusalMessage.noRoute(m, p)), socket.close(...WsClose.goingAway)];',
      'const alsoFine = [errorBody(envelope, message, code), reply.send(body), wss.close(() => resolve())];',
    ].join('\n');
    expect(messagesWorded('src/probe.ts', probe).sort()).toEqual(
      [
        'src/probe.ts:1: a GraphQLError',
        'src/probe.ts:2: a GraphQLError',
        'src/probe.ts:5: a REST envelope',
        'src/probe.ts:6: an envelope of the route',
        'src/probe.ts:7: an envelope written out',
        'src/probe.ts:8: a JSON-RPC error',
        'src/probe.ts:9: an McpError',
        'src/probe.ts:10: a tool error',
        'src/probe.ts:11: a close reason',
        'src/probe.ts:12: a text answer',
      ].sort(),
    );
  });
});

describe('error codes', () => {
  it('are written as text nowhere in src/ but the catalogue', () => {
    const found = sourceFiles(SRC)
      .map((path) => relative(SRC, path))
      .filter((file) => file !== 'errors.ts')
      .flatMap((file) => codeLiterals(`src/${file}`, readFileSync(join(SRC, file), 'utf8')));
    expect(found).toEqual([]);
  });

  it('are caught as text with their file and line, in the catalogue or not', () => {
    const probe = [
      "import { GraphQLError } from 'graphql';",
      "export const a = new GraphQLError('x', { extensions: { code: 'FORBIDDEN' } });",
      "export const b = new GraphQLError('x', { extensions: { code: 'SOMETHING_NEW' } });",
      "export const c = (e: GraphQLError) => e.extensions?.code === 'ANYTHING';",
      'export const d = ErrorCode.FORBIDDEN;',
    ].join('\n');
    expect(codeLiterals('src/probe.ts', probe)).toEqual([
      "src/probe.ts:2: export const a = new GraphQLError('x', { extensions: { code: 'FORBIDDEN' } });",
      "src/probe.ts:3: export const b = new GraphQLError('x', { extensions: { code: 'SOMETHING_NEW' } });",
      "src/probe.ts:4: export const c = (e: GraphQLError) => e.extensions?.code === 'ANYTHING';",
    ]);
  });

  it('keep their public names, each with the status of an answer refused with it', () => {
    expect(Object.fromEntries(ERROR_CODES.map((code) => [code, httpStatusOf(code)]))).toEqual({
      UNAUTHENTICATED: 401,
      FORBIDDEN: 403,
      NOT_FOUND: 404,
      BAD_USER_INPUT: 400,
      UPSTREAM_ERROR: 502,
      UPSTREAM_TIMEOUT: 504,
      UPSTREAM_UNAVAILABLE: 502,
      RATE_LIMITED: 429,
      EVENTS_EXPIRED: undefined,
      PERSISTED_QUERY_ONLY: 400,
      PERSISTED_QUERY_NOT_FOUND: 400,
      PERSISTED_QUERY_MISMATCH: 400,
      BAD_REQUEST: 400,
      OPERATION_RESOLUTION_FAILURE: 400,
      INTERNAL_SERVER_ERROR: 500,
    });
    for (const code of ERROR_CODES) expect(ErrorCode[code]).toBe(code);
  });
});
