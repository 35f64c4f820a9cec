import { createServer } from 'node:http';
import { createGatewayRuntime, type GatewayPlugin } from '@graphql-hive/gateway-runtime';
import { env, listenOn } from '../resolvers.js';
import { derivedFields } from './derived-fields.js';
import { composeVendingSupergraph } from './supergraph.js';

/*
 * S7's Hive Gateway peer: the gateway runtime the `hive-gateway` CLI runs
 * (@graphql-hive/gateway-runtime; the CLI package itself adds ~450 MB of tracing
 * and UI, bench/README), serving the supergraph composed from openapi.yaml
 * (@omnigraph/openapi) over the REST transport, one process, its defaults but
 * for logging, plus the hand-written peers' derived fields (derived-fields.ts). Child process entry; PORT, UPSTREAM_URL, UPSTREAM_API_KEY,
 * API_KEYS from the env.
 */

const clientKeys = new Set(env('API_KEYS').split(','));

// The same check as the other peers: a known client key or 401, before any GraphQL work.
const clientKeyCheck: GatewayPlugin = {
  onRequest({ request, endResponse }) {
    if (!clientKeys.has(request.headers.get('authorization') ?? ''))
      endResponse(Response.json({ errors: [{ message: 'Missing or unknown API key' }] }, { status: 401 }));
  },
};

const gateway = createGatewayRuntime({
  supergraph: await composeVendingSupergraph(env('UPSTREAM_URL'), env('UPSTREAM_API_KEY')),
  logging: false,
  landingPage: false,
  graphiql: false,
  plugins: () => [clientKeyCheck],
  ...derivedFields,
});

// The gateway is a request listener (it returns a promise Node does not wait for; it answers on the response).
createServer((request, response) => void gateway(request, response)).listen(listenOn);
