import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { demoBackend, answeringGateway, TEST_KEY, type RunningGateway } from '../helpers/gateway.js';
import { postGraphQL } from '../helpers/graphql-client.js';

const secret = 'db password is hunter2';
let running: RunningGateway;

beforeAll(async () => {
  const backend = demoBackend();
  backend.getTransaction = async () => {
    throw new Error(secret);
  };
  running = await answeringGateway({}, { backend });
});
afterAll(() => running.close());

describe('unexpected errors', () => {
  it('are masked on GraphQL: a generic message, no internals', async () => {
    const response = await postGraphQL(running, '{ transaction(id: "x") { status } }');
    expect(response.status).toBe(200);
    expect(response.body.data).toEqual({ transaction: null });
    expect(response.body.errors).toHaveLength(1);
    expect(response.body.errors![0]!.message).toBe('Unexpected error.');
    expect(JSON.stringify(response.body)).not.toContain('hunter2');
    expect(JSON.stringify(response.body)).not.toContain('.ts:');
  });

  it('are masked on REST: 500 with the contract envelope, no internals', async () => {
    const response = await running.fetch(`${running.url}/transactions/x`, { headers: { authorization: TEST_KEY } });
    expect(response.status).toBe(500);
    const text = await response.text();
    expect(JSON.parse(text)).toEqual({ errors: { message: 'Unexpected error.' } });
  });
});
