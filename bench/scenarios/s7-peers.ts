import type { BodyCheck } from '../lib/expect.js';
import { APOLLO_CLIENT_ACCEPT, graphqlTarget, measureHttp, type Measurement } from '../lib/http-load.js';
import * as q from '../lib/queries.js';
import { withChild, type Scenario } from '../lib/scenario.js';
import { CLIENT_KEY, PEERS, startGateway, startPeer, type PeerName } from '../lib/servers.js';
import { fmt } from '../lib/stats.js';
import { httpRow, ratioOf, times, verdict, type Cells } from '../lib/table.js';

interface Document {
  cases: () => Array<{ query: string; variables?: Record<string, unknown>; check: BodyCheck }>;
  accept?: string;
}

const one = (query: string, check: () => BodyCheck, variables?: Record<string, unknown>): Document => ({
  cases: () => [{ query, variables, check: check() }],
});

const PEER_ORDER = Object.keys(PEERS) as PeerName[];

const SHAPES: Array<{ label: string; sharedKey: string; target: number; gateway: Document; hive: Document }> = [
  {
    label: 'S1 transaction(id: $id), 60 ids in rotation',
    sharedKey: 'S1 graphql cache off',
    target: 1,
    // As S1 measures it (the figure it reuses): 60 ids in rotation, the id a variable, Apollo Client's Accept.
    gateway: { cases: q.rotatedSingleCases, accept: APOLLO_CLIENT_ACCEPT },
    hive: one(q.HIVE_SINGLE_QUERY, q.hiveSingleCheck),
  },
  {
    label: 'S2 transactions(50 ids)',
    sharedKey: 'S2 batch',
    target: 3,
    gateway: one(q.BATCH_QUERY, q.batchCheck, { ids: q.BATCH_IDS }),
    hive: one(q.HIVE_BATCH_QUERY, q.hiveBatchCheck),
  },
  {
    label: 'S2 fleet (20 aliases)',
    sharedKey: 'S2 fleet',
    target: 3,
    gateway: one(q.FLEET_QUERY, q.fleetCheck),
    hive: one(q.HIVE_FLEET_QUERY, q.hiveFleetCheck),
  },
];

const targetOf = (url: string, path: string, doc: Document) => graphqlTarget(url, path, CLIENT_KEY, doc.cases(), doc.accept);
const cpuText = (m: Measurement) => (Number.isFinite(m.cpuPerRequestUs) ? `${fmt(m.cpuPerRequestUs)} µs` : 'n/a');

export const s7: Scenario = {
  name: 'S7',
  title: 'peers: Apollo Server 5, Mercurius, Hive Gateway (OpenAPI)',
  async run({ upstream, shared, log }) {
    // peers[peer][shape]
    const peers = {} as Record<PeerName, Measurement[]>;
    for (const peer of PEER_ORDER) {
      peers[peer] = await withChild(startPeer(peer, upstream.url), async (child) => {
        const results: Measurement[] = [];
        for (const shape of SHAPES) {
          log(`${PEERS[peer].name}: ${shape.label}`);
          const doc = peer === 'hive' ? shape.hive : shape.gateway;
          results.push(await measureHttp(targetOf(child.url, PEERS[peer].path, doc), { upstream, server: child }));
        }
        return results;
      });
    }
    const reused = new Set(SHAPES.filter((s) => shared.has(s.sharedKey)).map((s) => s.sharedKey));
    const missing = SHAPES.filter((s) => !reused.has(s.sharedKey));
    if (missing.length > 0) {
      await withChild(startGateway(upstream.url, {}), async (gateway) => {
        for (const shape of missing) {
          log(`gateway (not measured earlier in this run): ${shape.label}`);
          const target = targetOf(gateway.url, '/graphql', shape.gateway);
          shared.set(shape.sharedKey, await measureHttp(target, { upstream, server: gateway }));
        }
      });
    }
    return SHAPES.flatMap((shape, i) => {
      const ours = shared.get(shape.sharedKey)!;
      const peerRows = PEER_ORDER.map((peer) =>
        httpRow('S7', `${PEERS[peer].name}: ${shape.label}`, peers[peer][i]!, {
          ratio: `gateway ${times(ratioOf(ours.rps.median, peers[peer][i]!.rps.median))} this peer`,
        }),
      );
      const from = reused.has(shape.sharedKey) ? ' (the S1/S2 measurement)' : '';
      return [...peerRows, httpRow('S7', `gateway (defaults): ${shape.label}${from}`, ours, againstBest(shape, ours, peers, i))];
    });
  },
};

/** The gateway's cells against the best clean peer of one shape. */
function againstBest(shape: (typeof SHAPES)[number], m: Measurement, peers: Record<PeerName, Measurement[]>, i: number): Cells {
  const clean = PEER_ORDER.filter((p) => peers[p][i]!.errors.total === 0);
  const best = clean.sort((a, b) => peers[b][i]!.rps.median - peers[a][i]!.rps.median)[0];
  const voidedPeers = PEER_ORDER.filter((p) => !clean.includes(p)).map((p) => PEERS[p].name);
  if (!best)
    return { ratio: 'n/a', target: `≥ ${shape.target}× the best peer: no peer without errors`, notes: '', voided: 'every peer had errors' };
  const theirs = peers[best][i]!;
  const ratio = ratioOf(m.rps.median, theirs.rps.median);
  const skipped = voidedPeers.length ? `; not compared (errors): ${voidedPeers.join(', ')}` : '';
  return {
    ratio: `${times(ratio)} the best peer (${PEERS[best].name})`,
    target: `≥ ${shape.target}× the best peer: ${verdict(ratio >= shape.target && m.errors.total === 0)}`,
    notes: [
      `CPU per request ${cpuText(m)}, ${times(ratioOf(m.cpuPerRequestUs, theirs.cpuPerRequestUs))} the best peer's ${cpuText(theirs)}${skipped}`,
      ...m.notes,
    ],
    voided: m.errors.total > 0 ? 'gateway figure had errors' : undefined,
  };
}
