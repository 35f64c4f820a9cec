import { openFilesLimit, subscribersAllowed } from '../lib/delivery.js';
import { fanoutInTurns, type SideFigures } from '../lib/fanout-turns.js';
import type { FleetRound } from '../lib/fleet-workers.js';
import { withChildren, type Scenario } from '../lib/scenario.js';
import { startGateway, startRawWs } from '../lib/servers.js';
import { fmt, median } from '../lib/stats.js';
import { row, times, verdict, type Row } from '../lib/table.js';

const ASKED = [5_000, 20_000];
const ROUNDS = 6;
/** The goal, at the largest size, for the gateway as deployed (sharing on): delivery p99 within this multiple of the raw broadcast's. */
const TARGET_VS_RAW = 1.5;
/** A fleet process this busy over its deliveries may itself have held them back: the figure is then a bound. */
const SATURATED_ELU = 0.95;

const medianOf = (f: SideFigures, pick: (r: FleetRound) => number) => median(f.rounds.map(pick));
const pct = (x: number) => `${fmt(x * 100)}%`;
function errorsOf(f: SideFigures) {
  const sum = (pick: (r: FleetRound) => number) => f.rounds.reduce((total, r) => total + pick(r), 0);
  const [missing, dup, wrong] = [sum((r) => r.missing), sum((r) => r.duplicates), sum((r) => r.wrong)];
  const total = missing + dup + wrong + f.unprobed + f.warmupErrors + f.failures;
  const text = `missing ${missing}, dup ${dup}, wrong ${wrong}, unprobed ${f.unprobed}, warm-up ${f.warmupErrors}, conn failures ${f.failures}`;
  return { total, text: total === 0 ? '0' : text };
}

function baseRow(variant: string, f: SideFigures, notes: string[]): Row {
  const p99s = f.rounds.map((r) => r.p99);
  const cpuMs = median(f.serverCpu) * 1_000;
  const [elu, answerMs] = [medianOf(f, (r) => r.loadgenElu), medianOf(f, (r) => r.answerMs)];
  return row('S4', variant, {
    value:
      `POST→delivery p50 ${fmt(medianOf(f, (r) => r.p50))} ms, p99 ${fmt(median(p99s))} ms ` +
      `[${fmt(Math.min(...p99s))}–${fmt(Math.max(...p99s))}], last ${fmt(medianOf(f, (r) => r.last))} ms`,
    p99: fmt(median(p99s)),
    errors: errorsOf(f).text,
    notes: [
      `${f.rounds.length} rounds (median), in turns`,
      `webhook answered in ${fmt(answerMs, 1)} ms`,
      `opened in ${fmt(f.openSeconds, 1)} s`,
      `server CPU per fan-out ${fmt(cpuMs)} ms (${fmt((cpuMs * 1_000) / f.size, 1)} µs/subscriber)`,
      `loadgen: ${f.processes} fleet processes, CPU per fan-out ${fmt(median(f.loadgenCpu) * 1_000)} ms, ` +
        `ELU ${pct(elu)} (busiest process over its deliveries)${elu > SATURATED_ELU ? ', saturated' : ''}`,
      ...notes,
      f.shortfall,
    ],
    voided: errorsOf(f).total > 0 ? 'lost, duplicated or wrong deliveries' : undefined,
  });
}

function gatewayRow(sharing: string, f: SideFigures, raw: SideFigures, judged: boolean): Row {
  // Per round, the gateway's p99 over raw's of the round next to it.
  const ratios = f.rounds.map((r, k) => r.p99 / raw.rounds[k]!.p99);
  const vsRaw = { median: median(ratios), min: Math.min(...ratios), max: Math.max(...ratios) };
  const rawClean = errorsOf(raw).total === 0;
  const saturated = [f, raw].some((x) => medianOf(x, (r) => r.loadgenElu) > SATURATED_ELU);
  const goal = `p99 ≤ ${TARGET_VS_RAW}× raw's${f.shortfall ? ` (at ${fmt(f.size)}: open-files limit)` : ''}`;
  const row = baseRow(`gateway, subscription sharing ${sharing}, ${fmt(f.size)} subscribers`, f, [
    `server CPU per fan-out ${times(median(f.serverCpu) / median(raw.serverCpu))} the raw broadcaster's`,
  ]);
  const goalVerdict =
    errorsOf(f).total > 0 || !rawClean
      ? 'VOID (errors)'
      : `${verdict(vsRaw.median <= TARGET_VS_RAW)}${saturated ? ' (load generator saturated: a bound)' : ''}`;
  return {
    ...row,
    ratio: `${times(vsRaw.median)} raw p99 (rounds ${fmt(vsRaw.min, 2)}–${fmt(vsRaw.max, 2)})${rawClean ? '' : ' VOID: raw had errors'}`,
    target: judged ? `${goal} ${goalVerdict}` : '',
  };
}

export const s4: Scenario = {
  name: 'S4',
  title: 'subscription fan-out',
  async run({ upstream, log }) {
    const sizes = ASKED.map((asked) => subscribersAllowed(asked));
    for (const { shortfall } of sizes) if (shortfall) log(`open-files limit ${openFilesLimit()}: ${shortfall}`);
    const largest = Math.max(...sizes.map((s) => s.size));
    const rows: Row[] = [];
    for (const sharing of ['on', 'off'] as const) {
      const [raw, gateway] = await withChildren(
        [() => startRawWs(), () => startGateway(upstream.url, { subscriptionSharing: sharing === 'on' })],
        ([rawWs, server]) =>
          fanoutInTurns(
            [
              { label: 'raw ws broadcast', server: rawWs!, kind: 'raw' },
              { label: `gateway, sharing ${sharing}`, server: server!, kind: 'graphql-ws' },
            ],
            sizes,
            ROUNDS,
            log,
          ),
      );
      sizes.forEach(({ size }, s) => {
        rows.push(
          baseRow(`raw ws broadcast (baseline), ${fmt(size)} clients, in turns with the sharing-${sharing} gateway`, raw![s]!, []),
          gatewayRow(sharing, gateway![s]!, raw![s]!, sharing === 'on' && size === largest),
        );
      });
    }
    return rows;
  },
};
