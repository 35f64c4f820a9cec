import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const dir = mkdtempSync(join(tmpdir(), 'vg-bench-redis-'));
const port = process.env.PORT ?? '0';
const args = ['--port', port, '--bind', process.env.HOST ?? '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir];
const redis = spawn('redis-server', [...args, ...process.argv.slice(2)], { stdio: 'inherit' });
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
