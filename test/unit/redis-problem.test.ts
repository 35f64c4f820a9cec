import { describe, expect, it } from 'vitest';
import { redisProblem } from '../../src/redis/redis-problem.js';
import { ReplicaNotConfirmed } from '../../src/redis/replica-wait.js';

/*
 * What the logs say when Redis fails: the meaning, never the client library's
 * own words; Redis's own refusals keep their first line.
 */

describe('a Redis failure in words an operator acts on', () => {
  it.each([
    ["Stream isn't writeable and enableOfflineQueue options is false", 'Redis is not answering (away, stalled or reconnecting)'],
    ['Command timed out', 'Redis is not answering (away, stalled or reconnecting)'],
    [
      "READONLY You can't write against a read only replica.",
      'the node is a read-only replica now (a failover demoted it, or the address names a replica)',
    ],
    // Any slot without a master stops the whole cluster, whichever master died: not the event log's slot moving.
    ['CLUSTERDOWN The cluster is down', 'the cluster is down: a slot has no master it can reach (a failover under way)'],
    ['TRYAGAIN Multiple keys request during rehashing of slot', "the cluster is moving the event log's slot (a failover under way)"],
    [
      'ERR This instance has cluster support disabled',
      'a node named as a cluster node is not part of a cluster (cluster support disabled)',
    ],
    [
      'All sentinels are unreachable. Retrying from scratch after 50ms.',
      'the Sentinels do not name a master by that name, or none of them answers',
    ],
    ['connect ECONNREFUSED 127.0.0.1:6390', 'nothing answers at the address'],
    ['WRONGPASS invalid username-password pair or user is disabled.', 'Redis refused the credentials'],
    [
      "OOM command not allowed when used memory > 'maxmemory'.",
      "Redis refused the write: OOM command not allowed when used memory > 'maxmemory'.",
    ],
  ])('%s', (message, meaning) => {
    expect(redisProblem(new Error(message))).toBe(meaning);
  });

  it('keeps a replica that did not confirm as it says it', () => {
    expect(redisProblem(new ReplicaNotConfirmed(500))).toBe('no replica confirmed the event within 500 ms');
  });
});
