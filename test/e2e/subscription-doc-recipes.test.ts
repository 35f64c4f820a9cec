import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildWebhookRequest } from '../../src/events/webhook-request.js';
import { docBlockAfter, reporting, runRecipes, typeErrorsOf, type RecipeProcess } from '../helpers/doc-recipes.js';
import { startGateway, TEST_KEY, type RunningGateway } from '../helpers/gateway.js';
import { waitFor } from '../helpers/wait-for.js';

/*
 * The recipes of docs/subscriptions.md ("Resume with your client") for
 * graphql-ws, Apollo Client's GraphQLWsLink and urql over graphql-ws, run as
 * written, in a Node process of their own (this Node: 20 has no WebSocket of
 * its own, so a recipe without `webSocketImpl` throws there).
 */

const GUIDE = 'docs/subscriptions.md';
let running: RunningGateway;
let recipes: RecipeProcess | undefined;
beforeAll(async () => {
  running = await startGateway({ SIMULATOR: 'off' });
});
afterAll(async () => {
  recipes?.stop();
  await running.close();
});

describe('the Node recipes of docs/subscriptions.md', () => {
  it('compile as written under strict TypeScript', async () => {
    const retry = docBlockAfter(GUIDE, '**Retry a refused connection.**');
    const overWs = ['**graphql-ws** (the client', '**Apollo Client** (`GraphQLWsLink`', '**urql over graphql-ws**'];
    expect(await typeErrorsOf([retry, ...overWs.map((heading) => docBlockAfter(GUIDE, heading))])).toEqual([]);
    expect(await typeErrorsOf([retry, docBlockAfter(GUIDE, '**graphql-sse** (its default')])).toEqual([]);
    expect(await typeErrorsOf([retry, docBlockAfter(GUIDE, '**Apollo Client over HTTP multipart**')])).toEqual([]);
  }, 60_000);

  it('graphql-ws, Apollo Client (GraphQLWsLink) and urql each receive an event as written', async () => {
    recipes = await runRecipes(
      [
        docBlockAfter(GUIDE, '**Retry a refused connection.**'),
        reporting(docBlockAfter(GUIDE, '**graphql-ws** (the client'), 'graphql-ws'),
        reporting(docBlockAfter(GUIDE, '**Apollo Client** (`GraphQLWsLink`'), 'Apollo Client'),
        reporting(docBlockAfter(GUIDE, '**urql over graphql-ws**'), 'urql'),
      ],
      running.url,
      TEST_KEY,
    );
    const { reports, stderr, exited } = recipes;

    // graphql-ws's own subscription, Apollo's and urql's: three over the recipe's one connection.
    const subscribed = await waitFor(() => running.gateway.activeSubscriptions() === 3 || exited() !== undefined, 15_000);
    expect({ subscribed, exited: exited(), stderr: stderr() }).toEqual({ subscribed: true, exited: undefined, stderr: '' });

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
    expect(stderr()).toBe('');
  }, 30_000);
});
