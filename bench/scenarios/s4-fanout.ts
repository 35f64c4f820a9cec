import type { Child } from '../lib/children.js';
import { DeliveryTracker, fdsNeeded, grown, openFilesLimit, type RoundResult } from '../lib/delivery.js';
import { withChild, type Scenario } from '../lib/scenario.js';
import { startGateway, startRawWs } from '../lib/servers.js';
import { fmt, median } from '../lib/stats.js';
import { graphqlWsFleet, rawFleet, type Fleet } from '../lib/subscribers.js';
import { verdict, type Row } from '../lib/table.js';
import { statusFor, webhookSender } from '../lib/webhooks.js';

/*
 * S4: one webhook fanned out to 1 000 then 5 000 graphql-ws subscribers (one
 * connection each), time from the POST to each delivery, 3 rounds per size;
 * and the same fan-out from a bare ws broadcaster as the physical floor.
 */

const SIZES = [1_000, 5_000];
const ROUNDS = 3;
const TARGET_P99_MS = 300;
const TARGET_VS_RAW = 3;

interface Figures {
  size: number;
  rounds: RoundResult[];
  openSeconds: number;
  unprobed: number;
  failures: number;
  cores: number;
  skipped?: string;
}

type Kind = { label: string; raw: false; sharing: 'on' | 'off' } | { label: string; raw: true };
const KINDS: Kind[] = [
  { label: 'raw ws broadcast (baseline)', raw: true },
  { label: 'gateway, subscription sharing on', raw: false, sharing: 'on' },
  { label: 'gateway, subscription sharing off', raw: false, sharing: 'off' },
];

/** The graphql-ws `next` message the raw broadcaster sends, so clients parse the same bytes as from the gateway. */
const rawMessage = (eventId: string, status: string) => JSON.stringify({ id: '1', type: 'next', payload: { data: { transactionUpdated: { eventId, status } } } });

async function measureKind(kind: Kind, server: Child, log: (m: string) => void): Promise<Figures[]> {
  const limit = openFilesLimit();
  const trackers = new Map(SIZES.map((size) => [size, new DeliveryTracker(size)]));
  let current = trackers.get(SIZES[0]!)!;
  const fleet: Fleet = kind.raw
    ? rawFleet(server.url, (i, data) => {
        // Parsed like graphql-ws parses it, so both fleets cost this process the same per message.
        const update = (JSON.parse(data.toString()) as { payload?: { data?: { transactionUpdated?: { eventId?: string; status?: string } } } }).payload?.data?.transactionUpdated;
        current.note(i, update?.eventId, update?.status);
      })
    : graphqlWsFleet(server.url, (i, eventId, status) => current.note(i, eventId, status));
  const sender = webhookSender(server.url, 2);
  const post = (id: string, n: number) => (kind.raw ? sender.postRaw('/broadcast', rawMessage(id, statusFor(n))) : sender.post(id, n));
  const figures: Figures[] = [];
  try {
    for (const size of SIZES) {
      if (!(limit >= fdsNeeded(size))) {
        figures.push({ size, rounds: [], openSeconds: 0, unprobed: 0, failures: 0, cores: 0, skipped: `ulimit -n ${limit} < ${fdsNeeded(size)} needed` });
        continue;
      }
      current = trackers.get(size)!;
      log(`${kind.label}: opening ${size} subscribers`);
      const openSeconds = await grown(fleet, size);
      const unprobed = await current.probeAll((id) => post(id, 0));
      const rounds: RoundResult[] = [];
      const cpu = server.cpuSeconds();
      const t = performance.now();
      for (let r = 0; r < ROUNDS; r += 1) {
        const id = `s4-${size}-${r}-${Date.now()}`;
        rounds.push(await current.round(id, statusFor(r + 1), () => post(id, r + 1)));
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      const cores = (server.cpuSeconds() - cpu) / ((performance.now() - t) / 1_000);
      figures.push({ size, rounds, openSeconds, unprobed, failures: fleet.failures, cores });
      log(`${kind.label} ${size}: p99 ${rounds.map((r) => fmt(r.p99)).join('/')} ms, last ${rounds.map((r) => fmt(r.last)).join('/')} ms`);
    }
  } finally {
    await fleet.close();
    await sender.close();
  }
  return figures;
}

export const s4: Scenario = {
  name: 'S4',
  title: 'subscription fan-out',
  async run({ upstream, log }) {
    const results = new Map<string, Figures[]>();
    for (const kind of KINDS) {
      const start = kind.raw ? startRawWs() : startGateway(upstream.url, { sharing: kind.sharing });
      results.set(kind.label, await withChild(start, (server) => measureKind(kind, server, log)));
    }
    const raw = results.get(KINDS[0]!.label)!;
    const rows: Row[] = [];
    for (const kind of KINDS) {
      for (const f of results.get(kind.label)!) {
        const med = (pick: (r: RoundResult) => number) => median(f.rounds.map(pick));
        const p99s = f.rounds.map((r) => r.p99);
        const errors = f.rounds.reduce((sum, r) => sum + r.missing + r.duplicates + r.wrong, 0) + f.unprobed + f.failures;
        const rawP99 = median(raw.find((x) => x.size === f.size)?.rounds.map((r) => r.p99) ?? []);
        const vsRaw = med((r) => r.p99) / rawP99;
        const targeted = !kind.raw && f.size === 5_000;
        rows.push({
          scenario: 'S4',
          variant: `${kind.label}, ${fmt(f.size)} subscribers`,
          value: f.skipped ? '' : `POST→delivery p50 ${fmt(med((r) => r.p50))} ms, p99 ${fmt(med((r) => r.p99))} ms [${fmt(Math.min(...p99s))}–${fmt(Math.max(...p99s))}], last ${fmt(med((r) => r.last))} ms`,
          p99: f.skipped ? '' : fmt(med((r) => r.p99)),
          ratio: kind.raw || f.skipped ? '' : `${fmt(vsRaw, 1)}× raw p99`,
          target: targeted && !f.skipped ? `p99 ≤ ${TARGET_P99_MS} ms & ≤ ${TARGET_VS_RAW}× raw ${verdict(med((r) => r.p99) <= TARGET_P99_MS && vsRaw <= TARGET_VS_RAW && errors === 0)}` : '',
          calls: '',
          errors: f.skipped
            ? ''
            : errors === 0
              ? '0'
              : `missing ${f.rounds.reduce((s, r) => s + r.missing, 0)}, dup ${f.rounds.reduce((s, r) => s + r.duplicates, 0)}, wrong ${f.rounds.reduce((s, r) => s + r.wrong, 0)}, unprobed ${f.unprobed}, conn failures ${f.failures}`,
          notes: f.skipped ? '' : `${ROUNDS} rounds (median); webhook answered in ${fmt(median(f.rounds.map((r) => r.answerMs)), 1)} ms; opened in ${fmt(f.openSeconds, 1)} s; server CPU ${fmt(f.cores, 2)} cores`,
          ...(f.skipped ? { voided: f.skipped } : errors > 0 ? { voided: 'lost, duplicated or wrong deliveries' } : {}),
        });
      }
    }
    return rows;
  },
};
