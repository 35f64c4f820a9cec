import { ReplicaNotConfirmed } from './replica-wait.js';

/*
 * What a failed Redis command or connection means, in words an operator acts
 * on: logged when the event log cannot be written and named in a webhook's
 * 503 log line, instead of the client library's own text ("Stream isn't
 * writeable and enableOfflineQueue options is false") or a stack trace for a
 * failover the deployment expects. Redis's own refusals (an OOM, an ACL) keep
 * their first line: that text is the server's, and it says what to fix.
 */

const KINDS: Array<[RegExp, string]> = [
  [/READONLY/, 'the node is a read-only replica now (a failover demoted it, or the address names a replica)'],
  [/\b(MOVED|ASK|TRYAGAIN)\b/, "the cluster is moving the event log's slot (a failover under way)"],
  // Any slot without a master stops the whole cluster, the event log's slot included, whichever master died.
  [/\bCLUSTERDOWN\b/, 'the cluster is down: a slot has no master it can reach (a failover under way)'],
  [/cluster support disabled/i, 'a node named as a cluster node is not part of a cluster (cluster support disabled)'],
  [/None of startup nodes|Failed to refresh slots cache/i, 'no node of the cluster answered'],
  [/sentinel/i, 'the Sentinels do not name a master by that name, or none of them answers'],
  [/NOAUTH|WRONGPASS|invalid (username-)?password|NOPERM/i, 'Redis refused the credentials'],
  [/ENOTFOUND|EAI_AGAIN/, 'the address does not resolve'],
  [/ECONNREFUSED/, 'nothing answers at the address'],
  [
    /timed out|Stream isn't writeable|Connection is closed|connection to Redis closed|ECONNRESET|EPIPE/i,
    'Redis is not answering (away, stalled or reconnecting)',
  ],
];

export function redisProblem(error: unknown): string {
  if (error instanceof ReplicaNotConfirmed) return error.message;
  const message = error instanceof Error ? error.message : String(error);
  for (const [pattern, meaning] of KINDS) if (pattern.test(message)) return meaning;
  return `Redis refused the write: ${message.split('\n', 1)[0]!.slice(0, 160)}`;
}
