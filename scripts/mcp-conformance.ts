import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { createGateway } from '../src/app/gateway.js';
import { DEVELOPMENT_API_KEY, loadConfig } from '../src/config/config.js';

/*
 * The MCP conformance suite's server scenarios that apply to /mcp, run
 * against a gateway started here with MCP=read (.ci/run calls it):
 *   tsx scripts/mcp-conformance.ts --node <node ≥ 22> --suite <…/@modelcontextprotocol/conformance/dist/index.js>
 * The suite sends no Authorization, and the gateway answers nothing without
 * a key: it talks to a loopback proxy that adds the development key to each
 * request and passes everything else as sent (Host and Origin included, which
 * the DNS rebinding scenario varies). The other scenarios (resources,
 * prompts, sampling, logging, the suite's own test tools) test features the
 * gateway does not offer.
 */

const SCENARIOS = ['server-initialize', 'ping', 'tools-list', 'dns-rebinding-protection'];

const { values } = parseArgs({ options: { node: { type: 'string' }, suite: { type: 'string' } } });
if (!values.node || !values.suite) {
  process.stderr.write('usage: tsx scripts/mcp-conformance.ts --node <node binary, 22 or later> --suite <conformance dist/index.js>\n');
  process.exit(2);
}

/** Forwards each request to `port` as sent, with the key added when it carries none. */
function keyAddingProxy(port: number): Promise<Server> {
  const proxy = createServer((incoming, outgoing) => {
    const headers = { ...incoming.headers, authorization: incoming.headers.authorization ?? DEVELOPMENT_API_KEY };
    const forwarded = httpRequest({ host: '127.0.0.1', port, method: incoming.method, path: incoming.url, headers }, (answer) => {
      outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(outgoing);
    });
    forwarded.on('error', () => outgoing.destroy());
    incoming.pipe(forwarded);
  });
  return new Promise((resolve) => proxy.listen(0, '127.0.0.1', () => resolve(proxy)));
}

const gateway = createGateway(loadConfig({ MCP: 'read', PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'warn', VENDING_POLL_MS: '0' }));
const { port } = await gateway.listen();
const proxy = await keyAddingProxy(port);
const url = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}/mcp`;
const failed: string[] = [];
for (const scenario of SCENARIOS) {
  // Not spawnSync: the gateway and the proxy answer from this process's event loop.
  const run = spawn(values.node, [values.suite, 'server', '--url', url, '--scenario', scenario], { stdio: 'inherit' });
  const [code] = (await once(run, 'exit')) as [number | null];
  if (code !== 0) failed.push(scenario);
}
await new Promise((resolve) => proxy.close(resolve));
await gateway.close();
process.stdout.write(
  failed.length === 0
    ? `mcp-conformance: ${SCENARIOS.length} scenarios passed (${SCENARIOS.join(', ')})\n`
    : `mcp-conformance: failed ${failed.join(', ')}\n`,
);
process.exit(failed.length === 0 ? 0 : 1);
