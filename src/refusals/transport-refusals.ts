import { quoted } from '../errors.js';

/*
 * The refusals a transport words in its own envelope, where there is no
 * GatewayError to throw: the HTTP front door's and its routes' answers (the
 * REST contract's `{errors: {message}}`, or the route's envelope), the
 * webhook intake's, the MCP endpoint's JSON-RPC errors and tool errors, and
 * text/plain pages. Each entry is the message alone; the call site puts it
 * in the envelope with its status. Worded once here, beside refusals.ts (the
 * GatewayErrors) and operation-refusals.ts (GraphQL's errors); WebSocket
 * close reasons are ws-close-codes.ts's. Clients and tests match them as text.
 */

/** Problems a refused webhook body's answer names one by one; the rest are counted. */
const MAX_PROBLEMS_NAMED = 10;

export const refusalMessage = {
  // HTTP: the front door and its routes
  /** 400: a path that does not even decode (`/%FF`), answered before routing. */
  pathNotAUrl: () => 'The request path is not a valid URL',
  /** 413: more bytes than MAX_BODY_BYTES, as sent or once decoded. */
  bodyTooLarge: (limit: number) => `Request body is larger than ${limit} bytes`,
  /** 415: a Content-Type Fastify cannot read as `type/subtype`. */
  notAMediaType: () => 'Content-Type is not a media type: send type/subtype, such as application/json',
  /** Any other 4xx of Fastify's own (a malformed request, one that timed out). */
  unreadableRequest: () => 'The request could not be read',
  /** 405, with `Allow`: `allow` lists the methods the path takes. */
  methodNotAllowed: (method: string, allow: string) => `Method ${method} is not allowed here; use ${allow}`,
  /** 404: no route has the path (`path` without its query string). */
  noRoute: (method: string, path: string) => `No route for ${method} ${path}`,
  /** 406 of /graphql: a stream of results for a client that takes whole answers only; `accept`: the media types it needs (yoga's). */
  streamNotAccepted: (accept: string) =>
    `This operation's result is a stream (a subscription, @defer or @stream): send Accept with one of ` +
    `${accept.replace(/; ?charset=[\w-]+/g, '')}`,
  /** 415: a Content-Encoding the gateway does not decode; `accepted`: those it does (RFC 7694). */
  encodingUnsupported: (coding: string, accepted: string) => encodingRefused(coding, `send ${accepted} or none`),
  /** 415: more content codings stacked than the gateway undoes. */
  tooManyEncodings: (codings: string, max: number) => encodingRefused(codings, `at most ${max} content codings are undone; send one`),
  /** 400: a body that does not decode with the coding it claims. */
  bodyNotDecodable: (coding: string) => `Request body is not valid ${coding} data`,
  /** 404 of GraphiQL's assets: another version is a page from before a restart onto other assets. */
  graphiqlAssetGone: () => 'No such GraphiQL asset; reload the page',
  /** 404 of the dashboard's images (text/plain). */
  dashboardImageNotFound: () => 'No such image.',
  /** 500 of the dashboard's page (text/plain): its built files could not be read. */
  dashboardUnreadable: () => 'The dashboard could not be read; see the gateway log.',

  // Webhooks
  /** 401: the Standard Webhooks headers a signature needs, missing. */
  webhookHeadersMissing: (headers: readonly string[]) => `Missing ${headers.join(', ')} header${headers.length > 1 ? 's' : ''}`,
  /** 401, or a reason of the one above: no secret was tried. */
  noMatchingSignature: () => 'No matching signature',
  /** 401: `reason` is the check's (above) or the Standard Webhooks library's words. */
  webhookSignatureRejected: (reason: string) => `Webhook signature rejected: ${reason}`,
  /** 400: `problems` are the webhook reader's (normalize.ts); a body of a megabyte can hold one per item, so the first few are named. */
  webhookBodyRejected: (problems: readonly string[]) => {
    const more = problems.length > MAX_PROBLEMS_NAMED ? `; and ${problems.length - MAX_PROBLEMS_NAMED} more` : '';
    return `Webhook body rejected: ${problems.slice(0, MAX_PROBLEMS_NAMED).join('; ')}${more}`;
  },
  /** 503, with Retry-After: the event log is away, or the gateway takes no events now (stopping, history full). */
  webhookEventsUnavailable: () => 'Events cannot be taken right now; retry later',
  /** 404: `POST /webhooks/{account}` for a name no account can have; `problem`: the account rule's words. */
  noWebhooksPath: (account: string, problem: string) => `No webhooks path for account ${quoted(account)}: an account name ${problem}`,

  // MCP: JSON-RPC errors of /mcp, and tool errors
  /** 404: the Mcp-Session-Id names no session (ended, expired, or another instance's). */
  mcpSessionNotFound: () => 'Session not found: initialize a new session',
  /** 403: the session belongs to another identity. */
  mcpSessionOfAnother: () => 'This session was opened with another key or token: initialize a session of your own',
  /** 400: JSON-RPC's parse error. */
  mcpBodyNotJson: () => 'Parse error: the body is not JSON',
  /** 400: a request without a session that is not `initialize`. */
  mcpInitializeFirst: () => 'Bad Request: initialize first, then send the Mcp-Session-Id header it answered with',
  /** 400: DELETE without the session to end. */
  mcpNoSessionHeader: () => 'Bad Request: no Mcp-Session-Id header',
  /** tools/call of a name tools/list does not give; `listed`: how many it gives. */
  unknownTool: (name: string, listed: number) => `Unknown tool ${quoted(name)}; tools/list names the ${listed} tools`,
  /** A tool call that did not come through the route (no request scope): the gateway's fault. */
  toolCallWithoutRequest: () => 'The tool call reached the server without its request',
  /** A tool error: arguments the tool's operation declares no variable for; `takes`: those it declares. */
  unknownToolArguments: (names: readonly string[], tool: string, takes: readonly string[]) =>
    `Unknown argument(s) ${names.map(quoted).join(', ')} for tool ${tool}; it takes ${takes.join(', ') || 'no arguments'}`,
  /** A tool error: required variables not given (or given null). */
  missingToolArguments: (names: readonly string[], tool: string) => `Missing required argument(s) ${names.join(', ')} for tool ${tool}`,
};

function encodingRefused(coding: string, what: string): string {
  return `Content-Encoding ${JSON.stringify(coding.slice(0, 40))} is not supported; ${what}`;
}
