import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { transform } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildWebhookRequest } from '../../src/events/webhook-request.js';
import { startGateway, TEST_KEY, type RunningGateway } from '../helpers/gateway.js';
import { waitFor } from '../helpers/wait-for.js';

/*
 * The recipes of docs/subscriptions.md ("Resume with your client") for
 * graphql-ws, Apollo Client's GraphQLWsLink and urql over graphql-ws, run as
 * written, in a Node process of their own (this Node: 20 has no WebSocket of
 * its own, so a recipe without `webSocketImpl` throws there). The only
 * changes: the address of this test's gateway, the key, and one line after
 * each recipe's own `after = …` that reports what it received.
 */

const ROOT = new URL('../../', import.meta.url);
const guide = readFileSync(new URL('docs/subscriptions.md', ROOT), 'utf8');
const RECORD_LINE = 'after = result.data?.transactionUpdated.eventId ?? after;';

/** The first ```ts block after `heading` in the guide. */
function blockAfter(heading: string): string {
  const at = guide.indexOf(heading);
  expect(at, heading).toBeGreaterThanOrEqual(0);
  const block = /```ts\n([\s\S]*?)```/.exec(guide.slice(at))?.[1];
  expect(block, heading).toBeDefined();
  return block!;
}

/** A recipe's block with a report of each result it records, under `label`. */
function reporting(block: string, label: string): string {
  expect(block).toContain(RECORD_LINE);
  return block.replaceAll(RECORD_LINE, `${RECORD_LINE} report(${JSON.stringify(label)}, result);`);
}

let running: RunningGateway;
let child: ChildProcess | undefined;
const dir = new URL(`node_modules/.cache/doc-recipes-${randomUUID()}/`, ROOT);
beforeAll(async () => {
  running = await startGateway({ SIMULATOR: 'off' });
});
afterAll(async () => {
  child?.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
  await running.close();
});

describe('the Node recipes of docs/subscriptions.md', () => {
  it('graphql-ws, Apollo Client (GraphQLWsLink) and urql each receive an event as written', async () => {
    const program = [
      'const key = process.env.RECIPE_KEY as string;',
      'const report = (label: string, result: unknown) => console.log(JSON.stringify({ label, result }));',
      blockAfter('**Retry a refused connection.**'),
      reporting(blockAfter('**graphql-ws** (the client'), 'graphql-ws'),
      reporting(blockAfter('**Apollo Client** (`GraphQLWsLink`'), 'Apollo Client'),
      reporting(blockAfter('**urql over graphql-ws**'), 'urql'),
    ]
      .join('\n')
      .replaceAll('ws://localhost:4000', running.url.replace(/^http/, 'ws'))
      .replaceAll('http://localhost:4000', running.url);
    const { code } = await transform(program, { loader: 'ts', format: 'esm' });
    mkdirSync(dir, { recursive: true });
    const file = new URL('recipes.mjs', dir);
    writeFileSync(file, code);

    const reports: Array<{ label: string; result: { data?: { transactionUpdated?: { status: string } } } }> = [];
    let stderr = '';
    child = spawn(process.execPath, [file.pathname], { env: { ...process.env, RECIPE_KEY: TEST_KEY }, stdio: ['ignore', 'pipe', 'pipe'] });
    let pending = '';
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      const lines = (pending + chunk).split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) if (line.startsWith('{')) reports.push(JSON.parse(line) as (typeof reports)[number]);
    });
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    let exited: number | null | undefined;
    child.on('exit', (exitCode) => (exited = exitCode));

    // graphql-ws's own subscription, Apollo's and urql's: three over the recipe's one connection.
    const subscribed = await waitFor(() => running.gateway.activeSubscriptions() === 3 || exited !== undefined, 15_000);
    expect({ subscribed, exited, stderr }).toEqual({ subscribed: true, exited: undefined, stderr: '' });

    const request = buildWebhookRequest({
      form: 'legacy',
      transaction: { transactionId: `recipe-${randomUUID().slice(0, 8)}`, status: 'seen-by-recipes', products: [] },
    });
    expect((await fetch(`${running.url}/webhooks`, { method: 'POST', headers: request.headers, body: request.body })).status).toBe(200);
    expect(await waitFor(() => reports.length >= 3, 10_000)).toBe(true);
    expect(reports.map(({ label, result }) => [label, result.data?.transactionUpdated?.status]).sort()).toEqual([
      ['Apollo Client', 'seen-by-recipes'],
      ['graphql-ws', 'seen-by-recipes'],
      ['urql', 'seen-by-recipes'],
    ]);
    expect(stderr).toBe('');
  }, 30_000);
});
