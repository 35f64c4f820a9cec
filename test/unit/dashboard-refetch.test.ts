import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { coalesced } from '../../web/coalesced.js';
import { coveredLater } from '../../web/history-view.js';
import { axisTop } from '../../web/sales-chart.js';

/*
 * The dashboard's pure parts that the browser test cannot pin down to the
 * millisecond: how often live events make it refetch, the chart's scale, and
 * when the history covers less than the range shown.
 */

describe('coalesced refetches', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  /** A task that takes `ms` and counts its runs. */
  function counting(ms: number) {
    const runs = { count: 0 };
    const task = async () => {
      runs.count += 1;
      await new Promise((resolve) => setTimeout(resolve, ms));
    };
    return { runs, task };
  }

  it('runs once for a burst of asks, within the delay', async () => {
    const { runs, task } = counting(10);
    const refetch = coalesced(task, 300);
    for (let ask = 0; ask < 50; ask += 1) refetch.soon();
    await vi.advanceTimersByTimeAsync(299);
    expect(runs.count).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(runs.count).toBe(1);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(runs.count).toBe(1);
  });

  it('keeps running under a steady stream of asks (no starvation), at most once per delay', async () => {
    const { runs, task } = counting(10);
    const refetch = coalesced(task, 300);
    for (let tick = 0; tick < 30; tick += 1) {
      refetch.soon();
      await vi.advanceTimersByTimeAsync(100);
    }
    // 3 s of asks every 100 ms: about one run per 300 ms, never none.
    expect(runs.count).toBeGreaterThanOrEqual(9);
    expect(runs.count).toBeLessThanOrEqual(10);
  });

  it('runs once more after a run that was asked for again while it ran', async () => {
    const { runs, task } = counting(1_000);
    const refetch = coalesced(task, 300);
    refetch.now();
    await vi.advanceTimersByTimeAsync(100);
    refetch.now();
    refetch.now();
    expect(runs.count).toBe(1);
    await vi.advanceTimersByTimeAsync(900);
    expect(runs.count).toBe(2);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(runs.count).toBe(2);
  });

  it('runs nothing once stopped', async () => {
    const { runs, task } = counting(10);
    const refetch = coalesced(task, 300);
    refetch.soon();
    refetch.stop();
    refetch.now();
    await vi.advanceTimersByTimeAsync(5_000);
    expect(runs.count).toBe(0);
  });
});

describe('the sales chart scale', () => {
  it('tops the axis at 1, 2 or 5 times a power of ten, never below the largest bar', () => {
    expect([0, 0.3, 1, 1.01, 3, 7.5, 10, 151.01, 1772, 0.042].map(axisTop)).toEqual([1, 0.5, 1, 2, 5, 10, 10, 200, 2000, 0.05]);
  });
});

describe('history coverage note', () => {
  const since = '2026-11-23T10:00:00.000Z';
  it('names the time the history starts from when it is later than the range', () => {
    expect(coveredLater({ since, coveredSince: '2026-11-23T10:20:00.000Z' })?.toISOString()).toBe('2026-11-23T10:20:00.000Z');
  });
  it('says nothing when the history covers the whole range', () => {
    expect(coveredLater({ since, coveredSince: since })).toBeUndefined();
    expect(coveredLater({ since, coveredSince: '2026-11-16T10:00:00.000Z' })).toBeUndefined();
  });
});
