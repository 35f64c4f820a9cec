import { RESTDataSource, type AugmentedRequest, type DataSourceConfig } from '@apollo/datasource-rest';
import type { Transaction, Vending, VendingReads } from '../resolvers.js';

/* The contract's reads as Apollo's docs write a data source: one instance per request, GETs deduplicated within it. */

export class VendingAPI extends RESTDataSource implements VendingReads {
  constructor(
    baseURL: string,
    private readonly apiKey: string,
    config: DataSourceConfig,
  ) {
    super(config);
    this.baseURL = `${baseURL}/`;
  }

  protected override willSendRequest(_path: string, request: AugmentedRequest): void {
    request.headers.authorization = this.apiKey;
  }

  async getTransaction(id: string): Promise<Transaction> {
    return (await this.get<{ data: Transaction }>(`transactions/${encodeURIComponent(id)}`)).data;
  }

  async getVending(id: string): Promise<Vending> {
    return (await this.get<{ data: Vending }>(`vendings/${encodeURIComponent(id)}`, { params: { products: 'flat' } })).data;
  }

  async getVendings(): Promise<Vending[]> {
    return (await this.get<{ data: Vending[] }>('vendings', { params: { products: 'flat' } })).data;
  }
}
