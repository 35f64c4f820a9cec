import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { createHistoryFeed } from '../../src/history/history-feed.js';
import { createLogger } from '../../src/logging/logger.js';
import { historyEvent as event } from '../helpers/history-events.js';

/*
 * Webhooks wait for their event's commit, so under a steady load the senders
 * one commit answered come back together. The feed must not start the next
 * commit for the first of them alone: that commit would cost as much as one
 * for all of them, and batches would alternate 1, 31, 1, 31…
 */

const SENDERS = 32;
const ROUNDS = 12;

describe('the history feed under a closed loop of senders', () => {
  it('commits the senders a commit answered together, not the first of them alone', async () => {
    const batches: number[] = [];
    const feed = createHistoryFeed({
      apply: async (events) => {
        batches.push(events.length);
        // A commit's round trip.
        await sleep(3);
        return events.map((_, index) => batches.length * 100 + index);
      },
      transient: () => true,
      logger: createLogger('silent'),
      retryMs: 1_000,
      maxQueued: 10_000,
    });
    let sent = 0;
    // Each sender posts its next webhook as soon as the last one was answered.
    await Promise.all(
      Array.from({ length: SENDERS }, async (_, sender) => {
        for (let round = 0; round < ROUNDS; round += 1)
          await feed.push(event(`t${sender}-${round}`, 'pending', 1_000 + (sent += 1), `e${sent}`));
      }),
    );
    await feed.close(1_000);
    expect(batches.reduce((sum, size) => sum + size, 0)).toBe(SENDERS * ROUNDS);
    // The first push starts a commit alone (nothing answered yet); after that each commit takes every sender.
    expect(batches.slice(2)).toEqual(Array.from({ length: batches.length - 2 }, () => SENDERS));
  });

  it('commits a lone webhook at once', async () => {
    const batches: number[] = [];
    const feed = createHistoryFeed({
      apply: async (events) => void batches.push(events.length),
      transient: () => true,
      logger: createLogger('silent'),
      retryMs: 1_000,
      maxQueued: 10_000,
    });
    for (let i = 0; i < 3; i += 1) await feed.push(event(`t${i}`, 'pending', 1_000 + i, `e${i}`));
    await feed.close(1_000);
    expect(batches).toEqual([1, 1, 1]);
  });
});
