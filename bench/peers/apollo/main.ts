import { readFileSync } from 'node:fs';
import { ApolloServer } from '@apollo/server';
import { startStandaloneServer } from '@apollo/server/standalone';
import { GraphQLError } from 'graphql';
import { env, listenOn, peerResolvers, SCHEMA_FILE } from '../resolvers.js';
import { VendingAPI } from './vending-api.js';

/*
 * The peer for S7: Apollo Server 5 standalone with @apollo/datasource-rest over
 * the same upstream, written the way Apollo's documentation does it. Child
 * process entry; PORT, UPSTREAM_URL, UPSTREAM_API_KEY, API_KEYS from the env.
 */

interface Context {
  dataSources: { api: VendingAPI };
}

const upstreamUrl = env('UPSTREAM_URL');
const upstreamKey = env('UPSTREAM_API_KEY');
const clientKeys = new Set(env('API_KEYS').split(','));

const resolvers = peerResolvers<Context>((context) => context.dataSources.api);

const server = new ApolloServer<Context>({
  typeDefs: readFileSync(SCHEMA_FILE, 'utf8'),
  resolvers,
});

await startStandaloneServer(server, {
  listen: listenOn,
  async context({ req }) {
    if (!clientKeys.has(req.headers.authorization ?? '')) {
      throw new GraphQLError('Missing or unknown API key', { extensions: { code: 'UNAUTHENTICATED', http: { status: 401 } } });
    }
    const { cache } = server;
    return { dataSources: { api: new VendingAPI(upstreamUrl, upstreamKey, { cache }) } };
  },
});
