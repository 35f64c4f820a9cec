import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEVELOPMENT_API_KEY } from '../../src/config/config.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';

/*
 * The README's curl examples must work as written against `npm start`'s
 * configuration: the development key and the demo data. The GraphQL blocks of
 * the README and of the guides in docs/ must be valid against the schema, and
 * their relative links must lead somewhere.
 */
const ROOT = new URL('../../', import.meta.url);
const readme = readFileSync(new URL('README.md', ROOT), 'utf8');
const guides = readdirSync(new URL('docs/', ROOT))
  .filter((name) => name.endsWith('.md'))
  .map((name) => `docs/${name}`);
const documents = ['README.md', ...guides, 'bench/README.md', 'bench/HISTORY.md'].map((path) => ({
  path,
  text: readFileSync(new URL(path, ROOT), 'utf8'),
}));
let running: RunningGateway;

beforeAll(async () => {
  running = await startGateway({ API_KEYS: '' });
});
afterAll(() => running.close());

describe('README examples', () => {
  it('name the development key the gateway accepts', () => {
    expect(readme).toContain(`Authorization: ${DEVELOPMENT_API_KEY}`);
  });

  it('REST curl lines return data', async () => {
    const paths = [...readme.matchAll(/curl -s http:\/\/localhost:4000(\/(?:vendings|transactions)[^\s]*)/g)].map((m) => m[1]!);
    expect(paths.length).toBeGreaterThanOrEqual(2);
    for (const path of paths) {
      const response = await fetch(`${running.url}${path}`, { headers: { authorization: DEVELOPMENT_API_KEY } });
      expect(response.status, path).toBe(200);
      expect(Object.keys((await response.json()) as object)).toEqual(['data']);
    }
  });

  it('list demo transactions by currency, sending no one to the source for them', async () => {
    expect(readme).not.toContain('demo-data.ts');
    const rows = [...readme.matchAll(/^\| ([A-Z]{3}) \| `([0-9a-f-]{36})` \|$/gm)].map((m) => [m[1]!, m[2]!] as const);
    expect(rows.length).toBeGreaterThanOrEqual(3);
    for (const [currency, id] of rows) {
      const response = await fetch(`${running.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: DEVELOPMENT_API_KEY },
        body: JSON.stringify({ query: 'query($id: ID!) { transaction(id: $id) { currency } }', variables: { id } }),
      });
      expect(((await response.json()) as { data?: { transaction: { currency: string } | null } }).data?.transaction?.currency, id).toBe(
        currency,
      );
    }
  });

  it('GraphQL curl body returns the demo fleet', async () => {
    const body = /-d '(\{"query".*\})'/.exec(readme)?.[1];
    expect(body).toBeDefined();
    const response = await fetch(`${running.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: DEVELOPMENT_API_KEY },
      body,
    });
    const json = (await response.json()) as { data: { vendings: { totalCount: number; nodes: unknown[] } } };
    expect(response.status).toBe(200);
    expect(json.data.vendings.totalCount).toBeGreaterThanOrEqual(6);
    expect(json.data.vendings.nodes).toHaveLength(json.data.vendings.totalCount);
  });
});

describe('GraphQL blocks of the README and docs/', () => {
  it('are valid against the schema', async () => {
    const { parse, validate } = await import('graphql');
    const { schema } = await import('../../src/graphql/schema.js');
    let count = 0;
    for (const { path, text } of documents) {
      for (const [, block] of text.matchAll(/```graphql\n([\s\S]*?)```/g)) {
        count += 1;
        expect(validate(schema, parse(block!)).map(String), `${path}: ${block!.slice(0, 80)}`).toEqual([]);
      }
    }
    expect(count).toBeGreaterThanOrEqual(8);
  });

  it('README GraphQL curl bodies other than subscriptions answer without errors', async () => {
    const bodies = [...readme.matchAll(/-d '(\{"query".*\})'/g)].map((m) => m[1]!).filter((body) => !body.includes('subscription'));
    expect(bodies.length).toBeGreaterThanOrEqual(2);
    for (const body of bodies) {
      const response = await fetch(`${running.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: DEVELOPMENT_API_KEY },
        body,
      });
      const json = (await response.json()) as { data?: unknown; errors?: unknown };
      expect(response.status, body).toBe(200);
      expect(json.errors, body).toBeUndefined();
    }
  });
});

/** GitHub's heading anchor: lower case, punctuation dropped, spaces as hyphens. */
const anchor = (heading: string) =>
  heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replaceAll(' ', '-');

describe('Relative links of the README and docs/', () => {
  it('name files that exist, and headings that exist in them', () => {
    const broken: string[] = [];
    for (const { path, text } of documents) {
      const outsideCode = text.replace(/```[\s\S]*?```/g, '');
      for (const [, target] of outsideCode.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target!)) continue; // http:, https:, mailto:
        const [file, hash] = target!.split('#') as [string, string | undefined];
        const resolved = file === '' ? new URL(path, ROOT) : new URL(file, new URL(path, ROOT));
        if (!existsSync(resolved)) {
          broken.push(`${path}: ${target} (no such file)`);
          continue;
        }
        if (hash === undefined || !resolved.pathname.endsWith('.md')) continue;
        const headings = [
          ...readFileSync(resolved, 'utf8')
            .replace(/```[\s\S]*?```/g, '')
            .matchAll(/^#+ (.+)$/gm),
        ].map((m) => anchor(m[1]!));
        if (!headings.includes(hash)) broken.push(`${path}: ${target} (no such heading)`);
      }
    }
    expect(broken).toEqual([]);
  });
});
