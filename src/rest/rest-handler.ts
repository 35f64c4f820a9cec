import type { Authenticator } from '../auth.js';
import type { Backend, Credential } from '../backends/backend.js';
import { dataEnvelope, isJsonObject, jsonTooDeep, MAX_JSON_DEPTH } from '../contract/index.js';
import { badUserInput, errorEnvelope, GatewayError, toRestError } from '../errors.js';
import { jsonResponse } from '../http/json-response.js';
import { BodyTooLarge, readBodyText } from '../http/read-body.js';
import { upstreamTallyOf } from '../http/use-request-log.js';
import { matchRoute, type RouteName } from './routes.js';

export interface RestHandlerOptions {
  backend: Backend;
  authenticator: Authenticator;
  /** Largest payment body accepted, in bytes. */
  maxBodyBytes: number;
  /** Told of every failure that is not an expected GatewayError (the client sees only "Unexpected error."). */
  onUnexpectedError: (error: unknown) => void;
  /** Counts the request against its key's rate limit; throws RATE_LIMITED over it. */
  admit: (credential: Credential) => Promise<void>;
}

type RouteHandler = (id: string, request: Request, url: URL, credential: Credential) => Promise<unknown>;

/**
 * The REST passthrough (DESIGN §4): the contract's paths at the gateway root,
 * answering the contract's envelopes from the same Backend as GraphQL.
 */
export function createRestHandler({ backend, authenticator, maxBodyBytes, onUnexpectedError, admit }: RestHandlerOptions) {
  // `products` is passed as given (contract part 4): its accepted values are not shown.
  const productsOf = (url: URL): { products: string | undefined } => ({ products: url.searchParams.get('products') ?? undefined });

  async function paymentBody(request: Request): Promise<Record<string, unknown>> {
    const text = await readBodyText(request, maxBodyBytes);
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw badUserInput('Request body must be a JSON object; it is not valid JSON');
    }
    if (!isJsonObject(body)) throw badUserInput('Request body must be a JSON object');
    if (jsonTooDeep(body)) throw badUserInput(`Request body nests deeper than ${MAX_JSON_DEPTH} levels`);
    return body;
  }

  const handlers: Record<RouteName, RouteHandler> = {
    getTransaction: async (id, _request, _url, credential) => dataEnvelope(await backend.getTransaction(id, credential)),
    listVendings: async (_id, _request, url, credential) => dataEnvelope(await backend.listVendings(productsOf(url), credential)),
    getVending: async (id, _request, url, credential) => dataEnvelope(await backend.getVending(id, productsOf(url), credential)),
    updatePayment: async (id, request, _url, credential) => backend.updatePayment(id, await paymentBody(request), credential),
  };

  /** The answer for a REST path; `undefined` for a path that is not the contract's. */
  return async function handleRest(request: Request, url: URL): Promise<Response | undefined> {
    const match = matchRoute(request.method, url.pathname);
    if (match.kind === 'unknown') return undefined;
    if (match.kind === 'method-not-allowed') {
      return jsonResponse(errorEnvelope(`Method ${request.method} is not allowed here; use ${match.allow}`), 405, { allow: match.allow });
    }
    try {
      const credential = await authenticator.authenticate(request.headers.get('authorization'), upstreamTallyOf(request));
      await admit(credential);
      const id = match.id ?? '';
      if (match.name !== 'listVendings' && id.trim() === '') throw badUserInput('The id in the path must not be empty');
      return jsonResponse(await handlers[match.name](id, request, url, credential));
    } catch (error) {
      if (error instanceof BodyTooLarge) return jsonResponse(errorEnvelope(error.message), 413);
      if (!(error instanceof GatewayError)) onUnexpectedError(error);
      const { status, body, headers } = toRestError(error);
      return jsonResponse(body, status, headers);
    }
  };
}
