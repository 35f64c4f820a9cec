import {
  ContractViolation,
  isJsonObject,
  parseTransaction,
  parseVending,
  parseVendingList,
  unwrapData,
} from '../../contract/index.js';
import { GatewayError, isGatewayError } from '../../errors.js';
import type { Backend, Credential, VendingQuery } from '../backend.js';
import { createUpstreamClient, type UpstreamClientOptions, type UpstreamRequest } from './upstream-client.js';
import { failureFromStatus } from './upstream-errors.js';

/** One finished upstream call, for request logs and metrics. */
export interface UpstreamCall {
  method: string;
  /** The contract's path template, e.g. `/transactions/{id}`. */
  route: string;
  /** HTTP status, or the gateway's error code when no answer came. */
  outcome: number | string;
  durationMs: number;
  attempts: number;
}

export interface RestBackendOptions extends UpstreamClientOptions {
  /** Sent as `Authorization` on every call; when undefined each client's own header is forwarded as is. */
  apiKey: string | undefined;
  /** Told of every upstream call when it ends. */
  onUpstreamCall?: (call: UpstreamCall) => void;
}

const segment = (id: string): string => encodeURIComponent(id);
const productsQuery = ({ products }: VendingQuery): string =>
  products === undefined ? '' : `?products=${encodeURIComponent(products)}`;

/** The Backend in front of the real service (contract part 4), over one undici Pool. */
export function createRestBackend(options: RestBackendOptions): Backend {
  const client = createUpstreamClient(options);

  async function call(route: string, request: Omit<UpstreamRequest, 'authorization'>, credential: Credential): Promise<unknown> {
    const started = performance.now();
    let outcome: number | string = 'UPSTREAM_ERROR';
    let attempts = 1;
    try {
      const response = await client.send({ ...request, authorization: options.apiKey ?? credential.authorization });
      outcome = response.status;
      attempts = response.attempts;
      if (response.status < 200 || response.status >= 300) throw failureFromStatus(response.status, response.text);
      if (request.method === 'PUT' && response.text.trim() === '') return {};
      try {
        return JSON.parse(response.text) as unknown;
      } catch {
        throw new GatewayError('UPSTREAM_ERROR', `Upstream answered ${response.status} with a body that is not JSON`);
      }
    } catch (error) {
      if (isGatewayError(error) && typeof outcome !== 'number') outcome = error.code;
      throw error;
    } finally {
      options.onUpstreamCall?.({ method: request.method, route, outcome, durationMs: performance.now() - started, attempts });
    }
  }

  /** Reads `{data}` and checks its shape; a violation is the upstream's fault. */
  function read<T>(body: unknown, parse: (data: unknown) => T): T {
    try {
      return parse(unwrapData(body));
    } catch (error) {
      if (error instanceof ContractViolation) throw new GatewayError('UPSTREAM_ERROR', `Upstream answer: ${error.message}`);
      throw error;
    }
  }

  return {
    async getTransaction(id, credential) {
      const body = await call('/transactions/{id}', { method: 'GET', path: `/transactions/${segment(id)}` }, credential);
      return read(body, parseTransaction);
    },
    async getVending(id, query, credential) {
      const body = await call('/vendings/{id}', { method: 'GET', path: `/vendings/${segment(id)}${productsQuery(query)}` }, credential);
      return read(body, parseVending);
    },
    async listVendings(query, credential) {
      const body = await call('/vendings', { method: 'GET', path: `/vendings${productsQuery(query)}` }, credential);
      return read(body, parseVendingList);
    },
    async updatePayment(id, payment, credential) {
      const path = `/transactions/${segment(id)}/payment`;
      const body = await call('/transactions/{id}/payment', { method: 'PUT', path, body: JSON.stringify(payment) }, credential);
      // The contract shows an empty object; anything else that is an object is carried back as sent.
      return isJsonObject(body) ? body : {};
    },
    close: () => client.close(),
  };
}
