import { describe, expect, it } from 'vitest';
import { answeringGateway, TEST_KEY, type RunningGateway } from '../helpers/gateway.js';

/*
 * In production (or INTROSPECTION=off) no error hints at the schema
 * (they would let a stranger map it): not for fields, and not for enum values and input
 * fields either, which graphql-js names while validating literals and
 * while coercing variables (at execution, past GraphQL Armor's filter).
 */

interface Case {
  query: string;
  variables?: Record<string, unknown>;
}

const cases: Record<string, Case> = {
  field: { query: '{ vendingz { totalCount } }' },
  argument: { query: '{ vending(idd: "1") { vendingId } }' },
  'variable type': { query: 'query ($p: ProductView) { vending(id: "1", products: $p) { vendingId } }' },
  'enum value, literal': { query: '{ vending(id: "1", products: FLATT) { vendingId } }' },
  'enum value, variable': { query: 'query ($p: ProductsView) { vending(id: "1", products: $p) { vendingId } }', variables: { p: 'FLATT' } },
  'input field, literal': { query: '{ vendings(filter: { onlin: true }) { totalCount } }' },
  'input field, variable': {
    query: 'query ($f: VendingFilter) { vendings(filter: $f) { totalCount } }',
    variables: { f: { onlin: true } },
  },
};

/** Every error message the gateway answers, over POST and GET. */
async function messages(running: RunningGateway, { query, variables }: Case): Promise<string[]> {
  const post = await running.fetch(`${running.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: TEST_KEY },
    body: JSON.stringify({ query, variables }),
  });
  const search = new URLSearchParams({ query, ...(variables ? { variables: JSON.stringify(variables) } : {}) });
  const get = await running.fetch(`${running.url}/graphql?${search}`, { headers: { accept: 'application/json', authorization: TEST_KEY } });
  const found: string[] = [];
  for (const response of [post, get]) {
    const body = (await response.json()) as { errors?: Array<{ message: string }> };
    expect(body.errors?.length, `${query}: ${JSON.stringify(body)}`).toBeGreaterThan(0);
    found.push(...body.errors!.map((error) => error.message));
  }
  return found;
}

describe('error hints at the schema', () => {
  it.each([
    ['NODE_ENV=production', { NODE_ENV: 'production', WEBHOOK_UNSIGNED: 'allow' }],
    ['INTROSPECTION=off', { INTROSPECTION: 'off' }],
  ])('are never given with %s', async (_name, env: Record<string, string>) => {
    const running = await answeringGateway(env);
    try {
      for (const [name, each] of Object.entries(cases)) {
        const found = await messages(running, each);
        for (const message of found) expect(message, name).not.toMatch(/did you mean|suggestion/i);
        // The refusal still says what was wrong.
        expect(found.join('\n'), name).toMatch(/vendingz|idd|ProductView|FLATT|onlin/);
      }
    } finally {
      await running.close();
    }
  });

  it('are given in development, where they help', async () => {
    const running = await answeringGateway();
    try {
      for (const [name, each] of Object.entries(cases)) {
        expect((await messages(running, each)).join('\n'), name).toMatch(/Did you mean/);
      }
    } finally {
      await running.close();
    }
  });
});
