import { readFileSync } from 'node:fs';
import Fastify from 'fastify';
import mercurius from 'mercurius';
import { Pool } from 'undici';
import { env, listenOn, peerResolvers, SCHEMA_FILE } from '../resolvers.js';
import { VendingClient } from './vending-client.js';

/*
 * S7's Mercurius peer: Fastify 5 + Mercurius with its JIT on (a document is compiled
 * with graphql-jit at its second execution, `jit: 1`, and runs compiled after), the Apollo peer's schema and
 * resolvers (../resolvers.ts), reads over one undici Pool (vending-client.ts). Child
 * process entry; PORT, UPSTREAM_URL, UPSTREAM_API_KEY, API_KEYS from the env.
 */

interface Context {
  api: VendingClient;
}

const pool = new Pool(env('UPSTREAM_URL'));
const upstreamKey = env('UPSTREAM_API_KEY');
const clientKeys = new Set(env('API_KEYS').split(','));

const app = Fastify({ logger: false });
app.addHook('onRequest', async (request, reply) => {
  if (!clientKeys.has(request.headers.authorization ?? ''))
    await reply.code(401).send({ errors: [{ message: 'Missing or unknown API key' }] });
});
await app.register(mercurius, {
  schema: readFileSync(SCHEMA_FILE, 'utf8'),
  resolvers: peerResolvers<Context>((context) => context.api) as never,
  context: () => ({ api: new VendingClient(pool, upstreamKey) }),
  jit: 1,
  graphiql: false,
});
await app.listen(listenOn);
