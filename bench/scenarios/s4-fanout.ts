import { performance } from 'node:perf_hooks';
import type { Child } from '../lib/children.js';
import { fleetProcesses, openFilesLimit, subscribersAllowed, type RoundResult } from '../lib/delivery.js';
import { startWorkerFleet, type FleetRound } from '../lib/fleet-workers.js';
import { withChild, type Scenario } from '../lib/scenario.js';
import { startGateway, startRawWs } from '../lib/servers.js';
import { fmt, median } from '../lib/stats.js';
import { times, verdict, type Row } from '../lib/table.js';
import { CURRENT, type Build } from '../lib/builds.js';
import { SLOWER_LIMIT } from '../lib/paired.js';
import { statusFor, webhookSender } from '../lib/webhooks.js';

/*
 * S4: one webhook fanned out to 5 000 then 20 000 graphql-ws subscribers (one
 * connection each) on one gateway, time from the POST to each delivery,
 * ROUNDS rounds per size; and the same frame to as many plain ws clients from
 * a bare ws broadcaster, the physical floor the goal is judged against. The
 * subscribers live in fleet processes (fleet-workers.ts): one process could
 * neither open 20 000 sockets nor parse 20 000 frames without becoming what
 * is measured. With `--baseline`, the gateway kinds also run on the
 * baseline's gateway, in turns.
 */

const ASKED = [5_000, 20_000];
const ROUNDS = 5;
/** Rounds before the measured ones, not counted: the first fan-outs of a process run unoptimised code. */
const WARMUP_ROUNDS = 2;
/** The goal, at the largest size: the gateway's delivery p99 within this multiple of the raw broadcast's. */
const TARGET_VS_RAW = 1.5;
/** A fleet process this busy over its deliveries may itself have held them back: the figure is then a bound. */
const SATURATED_ELU = 0.95;

interface Figures {
  size: number;
  /** Set when the open-files limit allowed fewer subscribers than asked. */
  shortfall?: string;
  rounds: FleetRound[];
  openSeconds: number;
  unprobed: number;
  /** Lost, duplicated or wrong deliveries in the warm-up rounds. */
  warmupErrors: number;
  failures: number;
  /** Server child's CPU over the rounds, in cores; the fleet processes' together, likewise. */
  cores: number;
  loadgenCores: number;
  processes: number;
}

type Kind = { label: string; raw: false; sharing: 'on' | 'off' } | { label: string; raw: true };
const KINDS: Kind[] = [
  { label: 'raw ws broadcast (baseline)', raw: true },
  { label: 'gateway, subscription sharing on', raw: false, sharing: 'on' },
  { label: 'gateway, subscription sharing off', raw: false, sharing: 'off' },
];

/**
 * The `next` frame the raw broadcaster sends: the gateway's for the same event, with a subscription id
 * of the same length (a UUID, as graphql-ws clients make them), so every client reads as many bytes.
 */
const rawMessage = (eventId: string, status: string) =>
  JSON.stringify({ id: '00000000-0000-4000-8000-000000000000', type: 'next', payload: { data: { transactionUpdated: { eventId, status } } } });

const sizes = () => ASKED.map((asked) => subscribersAllowed(asked));

async function measureKind(kind: Kind, server: Child, log: (m: string) => void): Promise<Figures[]> {
  const planned = sizes();
  const processes = fleetProcesses(Math.max(...planned.map((p) => p.size)));
  const fleet = await startWorkerFleet(server.url, kind.raw ? 'raw' : 'graphql-ws', processes);
  const sender = webhookSender(server.url, 2);
  const post = (id: string, n: number) => (kind.raw ? sender.postRaw('/broadcast', rawMessage(id, statusFor(n))) : sender.post(id, n));
  const figures: Figures[] = [];
  try {
    for (const { size, shortfall } of planned) {
      log(`${kind.label}: opening ${fmt(size)} subscribers in ${processes} fleet processes`);
      const opening = performance.now();
      await fleet.grow(size);
      const openSeconds = (performance.now() - opening) / 1_000;
      const unprobed = await fleet.probeAll((id) => post(id, 0));
      let warmupErrors = 0;
      for (let r = 0; r < WARMUP_ROUNDS; r += 1) {
        const id = `s4-warmup-${size}-${r}-${Date.now()}`;
        const round = await fleet.round(id, statusFor(r + 1), () => post(id, r + 1));
        warmupErrors += round.missing + round.duplicates + round.wrong;
      }
      const rounds: FleetRound[] = [];
      const cpu = server.cpuSeconds();
      const loadgenCpu = fleet.cpuSeconds();
      const t = performance.now();
      for (let r = 0; r < ROUNDS; r += 1) {
        const id = `s4-${size}-${r}-${Date.now()}`;
        rounds.push(await fleet.round(id, statusFor(r + 1), () => post(id, r + 1)));
        await new Promise((resolve) => setTimeout(resolve, 300));
      }
      const seconds = (performance.now() - t) / 1_000;
      const cores = (server.cpuSeconds() - cpu) / seconds;
      const loadgenCores = (fleet.cpuSeconds() - loadgenCpu) / seconds;
      figures.push({ size, ...(shortfall ? { shortfall } : {}), rounds, openSeconds, unprobed, warmupErrors, failures: fleet.failures, cores, loadgenCores, processes });
      log(`${kind.label} ${fmt(size)}: p99 ${rounds.map((r) => fmt(r.p99)).join('/')} ms, last ${rounds.map((r) => fmt(r.last)).join('/')} ms, loadgen ELU ${rounds.map((r) => pct(r.loadgenElu)).join('/')}`);
    }
  } finally {
    await fleet.close();
    await sender.close();
  }
  return figures;
}

const pct = (x: number) => `${fmt(x * 100)}%`;

/** Several sessions of one kind on one build: their rounds together, per size. */
function merged(sessions: Figures[][]): Figures[] {
  return sessions[0]!.map(({ size, shortfall, processes }) => {
    const parts = sessions.map((figures) => figures.find((f) => f.size === size)!);
    return {
      size,
      ...(shortfall ? { shortfall } : {}),
      rounds: parts.flatMap((f) => f.rounds),
      openSeconds: median(parts.map((f) => f.openSeconds)),
      unprobed: parts.reduce((sum, f) => sum + f.unprobed, 0),
      warmupErrors: parts.reduce((sum, f) => sum + f.warmupErrors, 0),
      failures: parts.reduce((sum, f) => sum + f.failures, 0),
      cores: median(parts.map((f) => f.cores)),
      loadgenCores: median(parts.map((f) => f.loadgenCores)),
      processes,
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

const errorsOf = (f: Figures) => f.rounds.reduce((sum, r) => sum + r.missing + r.duplicates + r.wrong, 0) + f.unprobed + f.warmupErrors + f.failures;
const p99Of = (f: Figures) => median(f.rounds.map((r) => r.p99));
const eluOf = (f: Figures) => median(f.rounds.map((r) => r.loadgenElu));

function errorsText(f: Figures): string {
  const sum = (pick: (r: RoundResult) => number) => f.rounds.reduce((total, r) => total + pick(r), 0);
  return errorsOf(f) === 0 ? '0' : `missing ${sum((r) => r.missing)}, dup ${sum((r) => r.duplicates)}, wrong ${sum((r) => r.wrong)}, unprobed ${f.unprobed}, warm-up ${f.warmupErrors}, conn failures ${f.failures}`;
}

interface RowInput {
  kind: Kind;
  f: Figures;
  /** The raw broadcaster's figures at the same size. */
  raw: Figures | undefined;
  /** With a baseline: this kind's figures on the baseline build, for the after row. */
  before: Figures | undefined;
  /** Row label suffix and notes when builds were paired. */
  paired: { label: string; sessions: number } | undefined;
}

function rowOf({ kind, f, raw, before, paired }: RowInput): Row {
  const med = (pick: (r: RoundResult) => number) => median(f.rounds.map(pick));
  const p99s = f.rounds.map((r) => r.p99);
  const errors = errorsOf(f);
  const rawClean = raw !== undefined && errorsOf(raw) === 0;
  const vsRaw = raw ? p99Of(f) / p99Of(raw) : Number.NaN;
  const targeted = !kind.raw && f.size === Math.max(...sizes().map((p) => p.size));
  const versus = before ? p99Of(f) / p99Of(before) : undefined;
  const clean = errors === 0 && (before ? errorsOf(before) === 0 : true);
  const elu = eluOf(f);
  const saturated = elu > SATURATED_ELU || (raw !== undefined && eluOf(raw) > SATURATED_ELU);
  const goal = `p99 ≤ ${TARGET_VS_RAW}× raw p99${f.shortfall ? ` (at ${fmt(f.size)}: open-files limit)` : ''}`;
  const target = [
    targeted && `${goal} ${errors > 0 || !rawClean ? 'VOID (errors)' : `${verdict(vsRaw <= TARGET_VS_RAW)}${saturated ? ' (load generator saturated: a bound)' : ''}`}`,
    versus !== undefined && `after p99 ≤ ${fmt(1 / SLOWER_LIMIT, 2)}× before ${clean ? verdict(versus <= 1 / SLOWER_LIMIT) : 'VOID'}`,
  ];
  const ratio = kind.raw ? '' : [`${fmt(vsRaw, 2)}× raw p99${rawClean ? '' : ' (VOID: raw had errors)'}`, versus !== undefined && `after/before p99 ${times(versus)}`];
  const notes = [
    `${f.rounds.length} rounds (median)${paired ? ` from ${paired.sessions} gateway(s) started in turns with the other build` : ''}`,
    `webhook answered in ${fmt(med((r) => r.answerMs), 1)} ms`,
    `opened in ${fmt(f.openSeconds, 1)} s`,
    `server CPU ${fmt(f.cores, 2)} cores`,
    `loadgen: ${f.processes} fleet processes, ${fmt(f.loadgenCores, 2)} cores, ELU ${pct(elu)} (busiest process over its deliveries)${elu > SATURATED_ELU ? ', saturated' : ''}`,
    f.shortfall,
  ];
  return {
    scenario: 'S4',
    variant: `${kind.label}, ${fmt(f.size)} subscribers${paired ? ` — ${paired.label}` : ''}`,
    value: `POST→delivery p50 ${fmt(med((r) => r.p50))} ms, p99 ${fmt(p99Of(f))} ms [${fmt(Math.min(...p99s))}–${fmt(Math.max(...p99s))}], last ${fmt(med((r) => r.last))} ms`,
    p99: fmt(p99Of(f)),
    ratio: [ratio].flat().filter(Boolean).join('; '),
    target: target.filter(Boolean).join('; '),
    calls: '',
    errors: errorsText(f),
    notes: notes.filter(Boolean).join('; '),
    ...(errors > 0 ? { voided: 'lost, duplicated or wrong deliveries' } : {}),
  };
}

export const s4: Scenario = {
  name: 'S4',
  title: 'subscription fan-out',
  async run({ upstream, log, baseline, comparisons }) {
    const limit = openFilesLimit();
    for (const { shortfall } of sizes()) if (shortfall) log(`open-files limit ${limit}: ${shortfall}`);
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
    const largest = Math.max(...raw.map((f) => f.size));
    const rows: Row[] = [];
    for (const kind of KINDS) {
      for (const build of kind.raw || !baseline ? [CURRENT] : [baseline, CURRENT]) {
        for (const f of results.get(keyOf(kind, build))!) {
          const before = baseline && !kind.raw && build === CURRENT ? results.get(keyOf(kind, baseline))!.find((x) => x.size === f.size) : undefined;
          const paired = baseline && !kind.raw ? { label: build.label, sessions: sessionsOf(kind, baseline).filter((b) => b === build).length } : undefined;
          rows.push(rowOf({ kind, f, raw: kind.raw ? undefined : raw.find((x) => x.size === f.size), before, paired }));
          if (before && !kind.raw && kind.sharing === 'on' && f.size === largest) {
            const versus = p99Of(f) / p99Of(before);
            const clean = errorsOf(f) === 0 && errorsOf(before) === 0;
            comparisons.push({
              scenario: 'S4',
              what: `one webhook → ${fmt(f.size)} graphql-ws subscribers, ${kind.label.replace('gateway, ', '')}: POST→delivery p99`,
              before: `${fmt(p99Of(before))} ms (${before.rounds.length} rounds)`,
              after: `${fmt(p99Of(f))} ms (${f.rounds.length} rounds)`,
              ratio: `p99 ${times(versus)}`,
              verdict: clean ? (versus <= 1 / SLOWER_LIMIT ? 'PASS' : `FAIL (p99 ${fmt((versus - 1) * 100)}% higher)`) : 'VOID (errors)',
            });
          }
        }
      }
    }
    return rows;
  },
};
