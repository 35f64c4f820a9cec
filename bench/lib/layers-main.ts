import { Bench } from 'tinybench';
import { Pool } from 'undici';
import { createSchema, createYoga } from 'graphql-yoga';
import { useResponseCache } from '@graphql-yoga/plugin-response-cache';
import { UPSTREAM_KEY } from './contract-upstream.js';
import { APOLLO_CLIENT_ACCEPT } from './http-load.js';
import { ROTATED_IDS, SINGLE_BY_ID_QUERY } from './queries.js';
import { gatewayEnv } from './servers.js';
import { ALL_PERMISSIONS, keyIdentity } from '../../src/auth/permissions.js';

// The built dist/, as deployed and as the bench's gateways run (gateway-main.ts says why).
const dist = <M>(path: string) => import(`../../dist/${path}.js`) as Promise<M>;
const { createGateway } = await dist<typeof import('../../src/app/gateway.js')>('app/gateway');
const { loadConfig } = await dist<typeof import('../../src/config/config.js')>('config/config');
const { createGraphQLServer } = await dist<typeof import('../../src/graphql/graphql-server.js')>('graphql/graphql-server');
const { newScope } = await dist<typeof import('../../src/http/request-scope.js')>('http/request-scope');
const { createCircuitBreaker } = await dist<typeof import('../../src/backends/rest/circuit-breaker.js')>('backends/rest/circuit-breaker');
const { createConcurrencyLimit } =
  await dist<typeof import('../../src/backends/rest/concurrency-limit.js')>('backends/rest/concurrency-limit');
const { createUpstreamClient } = await dist<typeof import('../../src/backends/rest/upstream-client.js')>('backends/rest/upstream-client');

const upstreamUrl = process.env.UPSTREAM_URL ?? '';
const READS = Number(process.env.BENCH_S9_READS ?? 8_000);
const ROUNDS = Number(process.env.BENCH_S9_ROUNDS ?? 5);
const IN_FLIGHT = 32;

const env = gatewayEnv(upstreamUrl);
const config = loadConfig(env);
const credential = { authorization: 'bench-key', identity: keyIdentity('bench-key', ALL_PERMISSIONS) };
const { upstream } = config;
if (!upstream) throw new Error('layers-main: UPSTREAM_URL is required');

const pool = new Pool(upstreamUrl, { connections: upstream.connections, pipelining: 1 });
const client = createUpstreamClient(upstream);
const breaker = createCircuitBreaker(upstream.breaker);
const limit = createConcurrencyLimit({ maxConcurrent: upstream.maxConcurrent, maxQueued: upstream.maxQueued });
// Gateways assembled and started (their features booted) without listening: only their parts are used.
const bare = createGateway(config, { fastPaths: { coalesce: false } });
const deployed = createGateway(config, {});
await Promise.all([bare.app.ready(), deployed.app.ready()]);

const masking = { isDev: false, errorMessage: 'Unexpected error.', onMasked: () => {} };
const yogaOf = (compiledExecution: boolean) =>
  createGraphQLServer({
    path: '/graphql',
    services: deployed.app.graphql.services,
    logger: deployed.logger,
    limits: config.limits,
    masking,
    graphiql: false,
    devApiKey: undefined,
    corsOrigins: [],
    compiledExecution,
    responseCache: undefined,
    plugins: [deployed.app.metrics.plugin()] as never,
  }).yoga;

const scope = () => {
  const made = newScope('bench', deployed.logger, config.upstreamCallsPerRequest);
  made.credential = credential;
  return made;
};
const viaUndici = async (id: string) => {
  const answer = await pool.request({ method: 'GET', path: `/transactions/${id}`, headers: { authorization: UPSTREAM_KEY } });
  return JSON.parse(await answer.body.text()) as unknown;
};
const viaClient = async (id: string) =>
  JSON.parse((await client.send({ method: 'GET', path: `/transactions/${id}`, authorization: UPSTREAM_KEY })).text) as unknown;

/** One GraphQL operation as /graphql runs it: yoga's handler, with the request's scope as its server context. */
function graphql(yoga: ReturnType<typeof yogaOf>) {
  return async (id: string) => {
    const request = new yoga.fetchAPI.Request('http://localhost/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'bench-key', accept: APOLLO_CLIENT_ACCEPT },
      body: JSON.stringify({ query: SINGLE_BY_ID_QUERY, variables: { id } }),
    });
    return (await yoga.fetch(request, { scope: scope() })).text();
  };
}

function bareYoga(responseCache: boolean) {
  const yoga = createYoga({
    logging: false,
    schema: createSchema({
      typeDefs: 'type Query { transaction(id: ID!): Transaction } type Transaction { id: ID! status: String productName: String }',
      resolvers: { Query: { transaction: (_: unknown, { id }: { id: string }) => ({ id, status: 'COMPLETED', productName: 'Cola' }) } },
    }),
    plugins: responseCache ? [useResponseCache({ session: () => null, ttl: 60_000 })] : [],
  });
  return async (id: string) => {
    const answer = await yoga.fetch('http://localhost/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: APOLLO_CLIENT_ACCEPT },
      body: JSON.stringify({ query: 'query One($id: ID!) { transaction(id: $id) { id status productName } }', variables: { id } }),
    });
    return answer.text();
  };
}

/** A layer: its name, one read through it, and the layer it adds to (none: it stands alone). */
type Layer = [name: string, read: (id: string) => Promise<unknown>, over?: string];

const UNDICI = 'undici request + JSON.parse (what the bare hop does, less its HTTP server)';
const CLIENT = 'upstream client (one deadline per call, retries, stop)';
const GUARDS = '+ concurrency limit + circuit breaker (opossum)';
const BACKEND = 'REST backend (+ contract check, call accounting)';
const DEPLOYED = '+ coalescing (the backend as deployed)';

/** In the order each adds to the one before it; the GraphQL rows each add to the deployed backend; yoga alone stands alone. */
const LAYERS: Layer[] = [
  [UNDICI, viaUndici],
  [CLIENT, viaClient, UNDICI],
  [GUARDS, (id) => limit.run(() => breaker.run(() => viaClient(id)), undefined, upstream.timeoutMs), CLIENT],
  [BACKEND, (id) => bare.app.upstream.getTransaction(id, credential, scope()), GUARDS],
  [DEPLOYED, (id) => deployed.backend.getTransaction(id, credential, scope()), BACKEND],
  ['GraphQL transaction(id: $id) in process, compiled execution (yoga engine, loaders, JSON writer)', graphql(yogaOf(true)), DEPLOYED],
  ['GraphQL transaction(id: $id) in process, graphql-js executor', graphql(yogaOf(false)), DEPLOYED],
  ['yoga alone: its handler over a one-field schema answering from memory (no gateway, no upstream)', bareYoga(false)],
  ['yoga alone, answered by its response cache (every read a hit)', bareYoga(true)],
];

async function cpuPerRead(layers: Layer[], warmup: boolean): Promise<Map<string, number>> {
  const cpu = new Map<string, number>();
  // Time 0: no time limit, READS reads. The warm-up (first round): every layer's code optimised, every document compiled.
  const limits = { iterations: READS, time: 0, warmup, warmupIterations: 2_000, warmupTime: 0 };
  const bench = new Bench({ concurrency: 'task', threshold: IN_FLIGHT, throws: true, ...limits });
  for (const [name, read] of layers) {
    let reads = 0;
    let before = process.cpuUsage();
    const beforeAll = () => {
      reads = 0;
      before = process.cpuUsage();
    };
    // Each phase (warm-up, then run) ends here: the run's is the last set.
    const afterAll = () => {
      const used = process.cpuUsage(before);
      cpu.set(name, (used.user + used.system) / reads);
    };
    bench.add(name, () => read(ROTATED_IDS[reads++ % ROTATED_IDS.length]!), { beforeAll, afterAll });
  }
  await bench.run();
  return cpu;
}

const rounds: Record<string, number[]> = {};
for (let round = 0; round < ROUNDS; round++) {
  // Alternating direction, so drift of the machine lands on every layer alike.
  const measured = await cpuPerRead(round % 2 === 0 ? LAYERS : [...LAYERS].reverse(), round === 0);
  for (const [name, us] of measured) (rounds[name] ??= []).push(us);
}
process.stdout.write(`${JSON.stringify(LAYERS.map(([name, , over]) => ({ name, over, rounds: rounds[name] })))}\n`);
process.exit(0);
