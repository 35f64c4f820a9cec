import { spawn, type ChildProcess } from 'node:child_process';
import { TEST_KEY } from './gateway.js';

/*
 * The gateway as `npm start` runs it (dist/main.js, built by the tests'
 * global set-up), in a process of its own, so a test can stop it the way an
 * orchestrator does: SIGTERM (a graceful restart) or SIGKILL (`kill -9`), and
 * start it again on the same port.
 */

export interface GatewayProcess {
  url: string;
  /** SIGTERM and waits for the exit (its shutdown sequence), or SIGKILL and waits for the exit. */
  stop(how: 'SIGTERM' | 'SIGKILL'): Promise<number | null>;
}

const healthy = (url: string) =>
  fetch(`${url}/healthz`).then(
    (response) => response.ok,
    () => false,
  );

/** Starts dist/main.js on `port` with `env` over the test defaults; resolves once it answers /healthz. */
export async function startGatewayProcess(port: number, env: Record<string, string>): Promise<GatewayProcess> {
  const url = `http://127.0.0.1:${port}`;
  const child: ChildProcess = spawn(process.execPath, ['dist/main.js'], {
    cwd: new URL('../..', import.meta.url),
    env: {
      ...process.env,
      HOST: '127.0.0.1',
      PORT: String(port),
      API_KEYS: TEST_KEY,
      LOG_LEVEL: 'silent',
      RATE_LIMIT_PER_SECOND: '0',
      ...env,
    },
    stdio: 'ignore',
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let up = false;
  for (const deadline = Date.now() + 30_000; !up && child.exitCode === null && Date.now() < deadline;) {
    up = await healthy(url);
    if (!up) await new Promise((resolve) => setTimeout(resolve, 50));
  }
  if (!up) {
    child.kill('SIGKILL');
    throw new Error(`the gateway process on port ${port} did not start (exit ${child.exitCode})`);
  }
  return {
    url,
    async stop(how) {
      if (child.exitCode === null) child.kill(how);
      return exited;
    },
  };
}
