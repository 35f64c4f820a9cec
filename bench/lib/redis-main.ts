import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/*
 * Child-process entry: a redis-server of the bench's own on PORT, held by a
 * Node process like every other child, so it dies with the harness even when
 * the harness is killed (child-preload.ts exits this process, and with it the
 * server). No persistence: no snapshot is written while something is timed.
 * Its files (a replica's copy of its master, a cluster node's nodes.conf) go
 * to a directory of its own, removed when it stops, never the working tree.
 * Arguments after the entry go to redis-server as they are (a replica's
 * `--replicaof`, a cluster node's options: redis-deployments.ts).
 */
const dir = mkdtempSync(join(tmpdir(), 'vg-bench-redis-'));
const extra = process.argv.slice(2);
const redis = spawn(
  'redis-server',
  [
    '--port',
    process.env.PORT ?? '0',
    '--bind',
    process.env.HOST ?? '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
    '--dir',
    dir,
    ...extra,
  ],
  { stdio: 'inherit' },
);
const removeDir = () => rmSync(dir, { recursive: true, force: true });
redis.on('error', (error) => {
  process.stderr.write(`redis-server: ${error.message}\n`);
  process.exit(1);
});
redis.on('exit', (code) => process.exit(code ?? 1));
process.on('exit', () => {
  redis.kill('SIGKILL');
  removeDir();
});
// Stopped by the bench: the server is gone before its directory is removed.
process.on('SIGTERM', () => {
  redis.removeAllListeners('exit');
  redis.once('exit', () => process.exit(0));
  redis.kill('SIGKILL');
});
