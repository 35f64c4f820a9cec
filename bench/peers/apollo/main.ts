import { readFileSync } from 'node:fs';
import { ApolloServer } from '@apollo/server';
import { startStandaloneServer } from '@apollo/server/standalone';
import { GraphQLError } from 'graphql';
import { VendingAPI, type ProductLine, type Transaction, type Vending } from './vending-api.js';

/*
 * The peer for S7: Apollo Server 5 standalone with @apollo/datasource-rest over
 * the same upstream, written the way Apollo's documentation does it. Child
 * process entry; PORT, UPSTREAM_URL, UPSTREAM_API_KEY, API_KEYS from the env.
 */

interface Context {
  dataSources: { api: VendingAPI };
}

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
};
const upstreamUrl = env('UPSTREAM_URL');
const upstreamKey = env('UPSTREAM_API_KEY');
const clientKeys = new Set(env('API_KEYS').split(','));

const total = (products: ProductLine[]) => products.reduce((sum, p) => sum + (p.productPrice ?? 0) * (p.quantity ?? 1), 0);

const resolvers = {
  Query: {
    transaction: (_: unknown, { id }: { id: string }, { dataSources }: Context) => dataSources.api.getTransaction(id),
    transactions: (_: unknown, { ids }: { ids: string[] }, { dataSources }: Context) => Promise.all(ids.map((id) => dataSources.api.getTransaction(id))),
    vending: (_: unknown, { id }: { id: string }, { dataSources }: Context) => dataSources.api.getVending(id),
    vendings: async (_: unknown, __: unknown, { dataSources }: Context) => ({ totalCount: (await dataSources.api.getVendings()).length }),
  },
  Transaction: { total: (t: Transaction) => total(t.products) },
  Vending: { productCount: (v: Vending) => (Array.isArray(v.products) ? v.products.length : null) },
};

const server = new ApolloServer<Context>({
  typeDefs: readFileSync(new URL('./schema.graphql', import.meta.url), 'utf8'),
  resolvers,
});

await startStandaloneServer(server, {
  listen: { port: Number(process.env.PORT ?? 0), host: process.env.HOST ?? '127.0.0.1' },
  async context({ req }) {
    if (!clientKeys.has(req.headers.authorization ?? '')) {
      throw new GraphQLError('Missing or unknown API key', { extensions: { code: 'UNAUTHENTICATED', http: { status: 401 } } });
    }
    const { cache } = server;
    return { dataSources: { api: new VendingAPI(upstreamUrl, upstreamKey, { cache }) } };
  },
});
