import type { Pool } from 'undici';
import type { Transaction, Vending, VendingReads } from '../resolvers.js';

/*
 * The contract's reads over one undici Pool, made per request the way the Apollo
 * peer's RESTDataSource is: a GET is sent once per request and its promise reused
 * (RESTDataSource's default "deduplicate during request lifetime"); nothing is
 * kept across requests.
 */

export class VendingClient implements VendingReads {
  private readonly gets = new Map<string, Promise<unknown>>();

  constructor(
    private readonly pool: Pool,
    private readonly apiKey: string,
  ) {}

  getTransaction(id: string): Promise<Transaction> {
    return this.data(`/transactions/${encodeURIComponent(id)}`);
  }

  getVending(id: string): Promise<Vending> {
    return this.data(`/vendings/${encodeURIComponent(id)}?products=flat`);
  }

  getVendings(): Promise<Vending[]> {
    return this.data('/vendings?products=flat');
  }

  private data<T>(path: string): Promise<T> {
    let pending = this.gets.get(path);
    if (!pending) {
      pending = this.get(path);
      this.gets.set(path, pending);
    }
    return pending as Promise<T>;
  }

  private async get(path: string): Promise<unknown> {
    const { statusCode, body } = await this.pool.request({ method: 'GET', path, headers: { authorization: this.apiKey } });
    const json = (await body.json()) as { data?: unknown; errors?: { message?: string } };
    if (statusCode < 200 || statusCode >= 300) throw new Error(`upstream ${statusCode}: ${json.errors?.message ?? 'no message'}`);
    return json.data;
  }
}
