import childProcess from 'node:child_process';
import { syncBuiltinESMExports } from 'node:module';
import net from 'node:net';

/*
 * Set-up of the unit tier (`npm run test:unit`): its tests run in process,
 * without engines, ports or child processes, so the tier is quick and needs
 * nothing running. A test that opens a socket, listens or starts a process
 * fails here with the reason, instead of quietly depending on a Redis or a
 * PostgreSQL that a developer's machine happens to have: such a test belongs
 * to another tier (vitest.config.ts).
 */

const refuse = (what: string) => () => {
  throw new Error(`the unit tier runs without ${what}: move this test to a tier that has them (vitest.config.ts)`);
};

net.Socket.prototype.connect = refuse('sockets');
net.Server.prototype.listen = refuse('ports') as typeof net.Server.prototype.listen;
for (const name of ['spawn', 'exec', 'execFile', 'fork', 'spawnSync', 'execSync', 'execFileSync'] as const) {
  Object.defineProperty(childProcess, name, { value: refuse('child processes'), configurable: true, writable: true });
}
// Named imports (`import { spawn } from 'node:child_process'`) see the refusals too.
syncBuiltinESMExports();
