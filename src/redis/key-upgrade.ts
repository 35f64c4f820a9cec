import type { Redis } from 'ioredis';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../logging/logger.js';
import type { RedisClients } from './redis-clients.js';
import type { RedisKeys } from './redis-keys.js';
import { redisProblem } from './redis-problem.js';

/*
 * A deployment on one Redis server that ran before the event log's keys
 * carried a hash tag keeps its log across the upgrade: at start, when the
 * untagged stream exists and the tagged one does not, the stream is renamed
 * (so SSE positions and resumes by event id go on), with the per-event keys
 * of the events it holds (event id → position, dedupe claims, last digests)
 * and the history's queue with its consumer group (so queued events still
 * reach PostgreSQL). RENAMENX makes it safe for instances starting together:
 * the first takes the keys over, the others find the tagged stream there.
 * Only on one server: a cluster never ran the untagged keys (their script
 * crossed slots).
 *
 * The start (and so the gateway's listening) waits for the move: a command
 * that fails because Redis or this process was slow (a timeout, a connection
 * that closed) is tried again until the move is done or WAIT_MS has passed,
 * since a move left undone at start is never done (the first event appended
 * makes the tagged stream, and RENAMENX then leaves the old one alone).
 */

/** How long the start keeps trying before it leaves the old keys where they are (said in the log). */
const WAIT_MS = 30_000;
/** The pause between two tries, after a command failed. */
const RETRY_MS = 200;

type Entries = Array<[id: string, fields: string[]]>;

/** Renames `from` to `to` unless `to` exists; false when `from` does not exist or `to` does. */
async function renamed(commands: Redis, from: string, to: string): Promise<boolean> {
  try {
    return (await commands.renamenx(from, to)) === 1;
  } catch (error) {
    if (String(error).includes('no such key')) return false;
    throw error;
  }
}

async function carryPerEventKeys(commands: Redis, keys: RedisKeys, untagged: NonNullable<RedisKeys['untagged']>): Promise<void> {
  const entries = (await commands.xrange(keys.stream, '-', '+')) as Entries;
  const batch = commands.pipeline();
  for (const [, fields] of entries) {
    const at = fields.indexOf('event');
    if (at < 0) continue;
    const event = JSON.parse(fields[at + 1] as string) as { eventId?: string; transactionId?: string; account?: string };
    if (typeof event.eventId === 'string') {
      batch.renamenx(untagged.eventPosition(event.eventId, event.account), keys.eventPosition(event.eventId, event.account));
      batch.renamenx(untagged.dedupe(event.eventId, event.account), keys.dedupe(event.eventId, event.account));
    }
    if (typeof event.transactionId === 'string')
      batch.renamenx(untagged.lastDigest(event.transactionId, event.account), keys.lastDigest(event.transactionId, event.account));
  }
  // A key already gone (expired) answers "no such key": nothing to carry.
  await batch.exec();
}

export async function carryUntaggedKeys(clients: RedisClients, keys: RedisKeys, logger: Logger): Promise<void> {
  const { untagged } = keys;
  const commands = clients.commands as Redis;
  if (!untagged || clients.topology !== 'standalone') return;
  const deadline = Date.now() + WAIT_MS;
  /** Whether a try failed: its rename of the stream may have been done with the answer lost, so the next try looks. */
  let failedBefore = false;
  let problem = 'Redis did not answer';
  while (Date.now() < deadline) {
    if (!(await clients.connected(deadline - Date.now()))) break;
    try {
      const stream =
        (await renamed(commands, untagged.stream, keys.stream)) ||
        (failedBefore && (await commands.exists(keys.stream)) === 1 && (await commands.exists(untagged.stream)) === 0);
      if (stream) await carryPerEventKeys(commands, keys, untagged);
      const queue = await renamed(commands, untagged.historyQueue, keys.historyQueue);
      if (stream || queue)
        logger.info(
          { stream: keys.stream, historyQueue: queue ? keys.historyQueue : undefined },
          'the event log kept by an earlier version was moved to its tagged keys',
        );
      return;
    } catch (error) {
      problem = redisProblem(error);
      failedBefore = true;
      await sleep(RETRY_MS);
    }
  }
  logger.warn(
    { reason: problem },
    "Redis did not take the start's look for an event log kept under the keys of an earlier version (untagged); it was not moved",
  );
}
