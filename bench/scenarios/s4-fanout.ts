import type { Child } from '../lib/children.js';
import { DeliveryTracker, fdsNeeded, grown, openFilesLimit, type RoundResult } from '../lib/delivery.js';
import { withChild, type Scenario } from '../lib/scenario.js';
import { startGateway, startRawWs } from '../lib/servers.js';
import { fmt, median } from '../lib/stats.js';
import { graphqlWsFleet, rawFleet, type Fleet } from '../lib/subscribers.js';
import { times, verdict, type Row } from '../lib/table.js';
import { CURRENT, type Build } from '../lib/builds.js';
import { SLOWER_LIMIT } from '../lib/paired.js';
import { statusFor, webhookSender } from '../lib/webhooks.js';

/*
 * S4: one webhook fanned out to 1 000 then 5 000 graphql-ws subscribers (one
 * connection each), time from the POST to each delivery, 3 rounds per size;
 * and the same fan-out from a bare ws broadcaster as the physical floor. With
 * `--baseline`, the gateway kinds also run on the baseline's gateway, in turns.
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

/** Several sessions of one kind on one build: their rounds together, per size. */
function merged(sessions: Figures[][]): Figures[] {
  return SIZES.map((size) => {
    const parts = sessions.map((figures) => figures.find((f) => f.size === size)!);
    const skipped = parts.find((f) => f.skipped)?.skipped;
    return {
      size,
      rounds: parts.flatMap((f) => f.rounds),
      openSeconds: median(parts.map((f) => f.openSeconds)),
      unprobed: parts.reduce((sum, f) => sum + f.unprobed, 0),
      failures: parts.reduce((sum, f) => sum + f.failures, 0),
      cores: median(parts.map((f) => f.cores)),
      ...(skipped ? { skipped } : {}),
    };
  });
}

/**
 * Which build each session of a kind runs on, in order. With a baseline the defaults (sharing on) alternate
 * before, after, before, after, so drift lands on both; sharing off gets one session each.
 */
function sessionsOf(kind: Kind, baseline: Build | undefined): Build[] {
  if (kind.raw || !baseline) return [CURRENT];
  return kind.sharing === 'on' ? [baseline, CURRENT, baseline, CURRENT] : [baseline, CURRENT];
}

const errorsOf = (f: Figures) => f.rounds.reduce((sum, r) => sum + r.missing + r.duplicates + r.wrong, 0) + f.unprobed + f.failures;
const p99Of = (f: Figures) => median(f.rounds.map((r) => r.p99));

export const s4: Scenario = {
  name: 'S4',
  title: 'subscription fan-out',
  async run({ upstream, log, baseline, comparisons }) {
    const results = new Map<string, Figures[]>();
    const keyOf = (kind: Kind, build: Build) => `${kind.label}|${build.label}`;
    for (const kind of KINDS) {
      const sessions = new Map<Build, Figures[][]>();
      for (const build of sessionsOf(kind, baseline)) {
        const start = kind.raw ? startRawWs() : startGateway(upstream.url, { sharing: kind.sharing }, {}, build);
        const label = baseline && !kind.raw ? `${kind.label} — ${build.label}` : kind.label;
        const figures = await withChild(start, (server) => measureKind({ ...kind, label }, server, log));
        sessions.set(build, [...(sessions.get(build) ?? []), figures]);
      }
      for (const [build, list] of sessions) results.set(keyOf(kind, build), merged(list));
    }
    const raw = results.get(keyOf(KINDS[0]!, CURRENT))!;
    const rows: Row[] = [];
    for (const kind of KINDS) {
      for (const build of kind.raw || !baseline ? [CURRENT] : [baseline, CURRENT]) {
        const paired = baseline && !kind.raw;
        for (const f of results.get(keyOf(kind, build))!) {
          const med = (pick: (r: RoundResult) => number) => median(f.rounds.map(pick));
          const p99s = f.rounds.map((r) => r.p99);
          const errors = errorsOf(f);
          const rawP99 = median(raw.find((x) => x.size === f.size)?.rounds.map((r) => r.p99) ?? []);
          const vsRaw = med((r) => r.p99) / rawP99;
          const targeted = !kind.raw && f.size === 5_000;
          const before = paired && build === CURRENT ? results.get(keyOf(kind, baseline))!.find((x) => x.size === f.size)! : undefined;
          const versus = before && !f.skipped && !before.skipped ? p99Of(f) / p99Of(before) : undefined;
          const clean = errors === 0 && (before ? errorsOf(before) === 0 : true);
          const slower = versus === undefined ? '' : `after p99 ≤ ${fmt(1 / SLOWER_LIMIT, 2)}× before ${clean ? verdict(versus <= 1 / SLOWER_LIMIT) : 'VOID'}`;
          if (versus !== undefined && !kind.raw && kind.sharing === 'on' && f.size === 5_000) {
            comparisons.push({
              scenario: 'S4',
              what: `one webhook → ${fmt(f.size)} graphql-ws subscribers, ${kind.label.replace('gateway, ', '')}: POST→delivery p99`,
              before: `${fmt(p99Of(before!))} ms (${before!.rounds.length} rounds)`,
              after: `${fmt(p99Of(f))} ms (${f.rounds.length} rounds)`,
              ratio: `p99 ${times(versus)}`,
              verdict: clean ? (versus <= 1 / SLOWER_LIMIT ? 'PASS' : `FAIL (p99 ${fmt((versus - 1) * 100)}% higher)`) : 'VOID (errors)',
            });
          }
          rows.push({
            scenario: 'S4',
            variant: `${kind.label}, ${fmt(f.size)} subscribers${paired ? ` — ${build.label}` : ''}`,
            value: f.skipped ? '' : `POST→delivery p50 ${fmt(med((r) => r.p50))} ms, p99 ${fmt(med((r) => r.p99))} ms [${fmt(Math.min(...p99s))}–${fmt(Math.max(...p99s))}], last ${fmt(med((r) => r.last))} ms`,
            p99: f.skipped ? '' : fmt(med((r) => r.p99)),
            ratio: kind.raw || f.skipped ? '' : [`${fmt(vsRaw, 1)}× raw p99`, versus !== undefined && `after/before p99 ${times(versus)}`].filter(Boolean).join('; '),
            target: [targeted && !f.skipped && `p99 ≤ ${TARGET_P99_MS} ms & ≤ ${TARGET_VS_RAW}× raw ${verdict(med((r) => r.p99) <= TARGET_P99_MS && vsRaw <= TARGET_VS_RAW && errors === 0)}`, slower].filter(Boolean).join('; '),
            calls: '',
            errors: f.skipped
              ? ''
              : errors === 0
                ? '0'
                : `missing ${f.rounds.reduce((s, r) => s + r.missing, 0)}, dup ${f.rounds.reduce((s, r) => s + r.duplicates, 0)}, wrong ${f.rounds.reduce((s, r) => s + r.wrong, 0)}, unprobed ${f.unprobed}, conn failures ${f.failures}`,
            notes: f.skipped ? '' : `${f.rounds.length} rounds (median)${paired ? ` from ${sessionsOf(kind, baseline).filter((b) => b === build).length} gateway(s) started in turns with the other build` : ''}; webhook answered in ${fmt(median(f.rounds.map((r) => r.answerMs)), 1)} ms; opened in ${fmt(f.openSeconds, 1)} s; server CPU ${fmt(f.cores, 2)} cores`,
            ...(f.skipped ? { voided: f.skipped } : errors > 0 ? { voided: 'lost, duplicated or wrong deliveries' } : {}),
          });
        }
      }
    }
    return rows;
  },
};
