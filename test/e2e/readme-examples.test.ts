import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEVELOPMENT_API_KEY } from '../../src/config/index.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';

/*
 * The README's curl examples must work as written against `npm start`'s
 * configuration: the development key and the demo data.
 */
const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
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

describe('README GraphQL blocks', () => {
  it('are valid against the schema', async () => {
    const { parse, validate } = await import('graphql');
    const { schema } = await import('../../src/graphql/schema.js');
    const blocks = [...readme.matchAll(/```graphql\n([\s\S]*?)```/g)].map((m) => m[1]!);
    expect(blocks.length).toBeGreaterThanOrEqual(2);
    for (const block of blocks) expect(validate(schema, parse(block)).map(String), block.slice(0, 80)).toEqual([]);
  });
});
