import type { TransactionStatsQuery } from '../src/graphql/generated/operations.js';
import { money } from './render.js';

/*
 * Sales per minute as an SVG bar chart: one bar per interval of
 * `transactionStats`, in one currency (amounts of different currencies are
 * never stacked or added), drawn at the width it is given so labels keep
 * their size on a phone. Screen readers get one sentence (role="img").
 */

export type StatsInterval = TransactionStatsQuery['transactionStats']['intervals'][number];

/** One interval's sales in one currency. */
interface Bar {
  start: string;
  count: number;
  totalSold: number;
}

const barsIn = (intervals: readonly StatsInterval[], currency: string): Bar[] =>
  intervals.map((interval) => {
    const part = interval.byCurrency.find((entry) => entry.currency === currency);
    return { start: interval.start, count: part?.count ?? 0, totalSold: part?.totalSold ?? 0 };
  });

const SVG = 'http://www.w3.org/2000/svg';
const HEIGHT = 190;
const PAD = { top: 24, right: 10, bottom: 26, left: 44 };
/** Room an axis label needs, in pixels, so neighbours never overlap. */
const LABEL_ROOM = 48;

function svg<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attributes: Record<string, string | number>,
  ...children: Array<Node | string>
): SVGElementTagNameMap[K] {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
  node.append(...children);
  return node;
}

/** Hours and minutes in 24-hour form whatever the locale: the axis has little room. */
const clock = (iso: string): string => new Date(iso).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', hourCycle: 'h23' });
const axisNumber = (value: number): string => value.toLocaleString(undefined, { maximumFractionDigits: 2 });

/** A round top for the axis: 1, 2 or 5 times a power of ten, at least the largest bar. */
export function axisTop(largest: number): number {
  if (largest <= 0) return 1;
  const power = 10 ** Math.floor(Math.log10(largest));
  return ([1, 2, 5, 10].find((step) => largest <= step * power) ?? 10) * power;
}

/** What the chart shows, in one sentence. */
function chartSummary(intervals: readonly Bar[], currency: string): string {
  const sold = intervals.reduce((sum, interval) => sum + interval.totalSold, 0);
  const count = intervals.reduce((sum, interval) => sum + interval.count, 0);
  const head = `Sales per minute${currency ? ` in ${currency}` : ''} over the last ${intervals.length} minutes`;
  if (count === 0) return `${head}: no transactions yet.`;
  const busiest = intervals.reduce((best, interval) => (interval.totalSold > best.totalSold ? interval : best));
  const current = intervals.at(-1);
  return (
    `${head}: ${money(sold, currency)} sold in ${count} transaction${count === 1 ? '' : 's'}; ` +
    `busiest minute ${clock(busiest.start)} with ${money(busiest.totalSold, currency)}; ` +
    `this minute ${money(current?.totalSold ?? 0, currency)}.`
  );
}

/** The chart of `currency`'s sales at `width` pixels; the last interval is the current minute. */
export function salesChart(all: readonly StatsInterval[], width: number, currency: string): SVGSVGElement {
  const intervals = barsIn(all, currency);
  const top = axisTop(Math.max(0, ...intervals.map((interval) => interval.totalSold)));
  const plotWidth = width - PAD.left - PAD.right;
  const plotHeight = HEIGHT - PAD.top - PAD.bottom;
  const baseline = PAD.top + plotHeight;
  const slot = plotWidth / Math.max(1, intervals.length);
  const barWidth = Math.max(1, slot * 0.7);
  const root = svg('svg', {
    class: 'chart',
    width,
    height: HEIGHT,
    viewBox: `0 0 ${width} ${HEIGHT}`,
    role: 'img',
    'aria-label': chartSummary(intervals, currency),
    'data-currency': currency,
  });

  // The axis's unit: its figures are amounts in this currency.
  if (currency) root.append(svg('text', { class: 'tick unit', x: PAD.left - 6, y: 11, 'text-anchor': 'end' }, currency));
  for (const share of [0, 0.5, 1]) {
    const y = Math.round(baseline - plotHeight * share) + 0.5;
    root.append(
      svg('line', { class: share === 0 ? 'axis' : 'grid', x1: PAD.left, x2: width - PAD.right, y1: y, y2: y }),
      svg('text', { class: 'tick', x: PAD.left - 6, y: y + 4, 'text-anchor': 'end' }, axisNumber(top * share)),
    );
  }

  const every = [5, 10, 15, 30].find((minutes) => slot * minutes >= LABEL_ROOM) ?? 60;
  intervals.forEach((interval, index) => {
    const current = index === intervals.length - 1;
    // An empty minute is a sliver on the baseline, so the hour's 60 slots stay visible.
    const height = interval.totalSold > 0 ? Math.max(2, (interval.totalSold / top) * plotHeight) : 1;
    const x = PAD.left + index * slot + (slot - barWidth) / 2;
    const classes = ['bar', interval.totalSold > 0 ? '' : 'empty', current ? 'current' : ''].filter(Boolean).join(' ');
    const tip =
      `${clock(interval.start)}: ${money(interval.totalSold, currency)} sold, ` +
      `${interval.count} transaction${interval.count === 1 ? '' : 's'} in ${currency}`;
    root.append(
      svg(
        'rect',
        {
          class: classes,
          x: x.toFixed(2),
          y: (baseline - height).toFixed(2),
          width: barWidth.toFixed(2),
          height: height.toFixed(2),
          'data-start': interval.start,
          'data-total-sold': interval.totalSold,
          'data-count': interval.count,
        },
        svg('title', {}, tip),
      ),
    );
    const centre = PAD.left + (index + 0.5) * slot;
    if (new Date(interval.start).getMinutes() % every === 0 && centre + LABEL_ROOM / 2 <= width) {
      root.append(svg('text', { class: 'tick', x: centre.toFixed(2), y: HEIGHT - 8, 'text-anchor': 'middle' }, clock(interval.start)));
    }
  });
  return root;
}
