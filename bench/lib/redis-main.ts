import { spawn } from 'node:child_process';

/*
 * Child-process entry: a redis-server of the bench's own on PORT, held by a
 * Node process like every other child, so it dies with the harness even when
 * the harness is killed (child-preload.ts exits this process, and with it the
 * server). No persistence: no snapshot is written while something is timed.
 * Arguments after the entry go to redis-server as they are (a replica's
 * `--replicaof`, a cluster node's options: redis-deployments.ts).
 */
const extra = process.argv.slice(2);
const redis = spawn('redis-server', ['--port', process.env.PORT ?? '0', '--bind', process.env.HOST ?? '127.0.0.1', '--save', '', '--appendonly', 'no', ...extra], { stdio: 'inherit' });
redis.on('error', (error) => {
  process.stderr.write(`redis-server: ${error.message}\n`);
  process.exit(1);
});
redis.on('exit', (code) => process.exit(code ?? 1));
process.on('exit', () => redis.kill('SIGKILL'));
process.on('SIGTERM', () => process.exit(0));
