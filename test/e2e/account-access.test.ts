import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startForwardGateway, answeringGateway, type RunningGateway } from '../helpers/gateway.js';
import { startStandInUpstream, type StandInUpstream } from '../helpers/stand-in-upstream.js';

/*
 * The account access a gateway is made with (app.accountAccess, and the same
 * object in every GraphQL operation's services): in forward mode it asks the
 * service itself, `GET /transactions/{id}` with the client's own key, once
 * per key and account; with the gateway's keys the key's `@account` says.
 */

const GOOD = 'good-key';
const UNKNOWN_ID = '8d2f5c1e-6a4b-4f0e-9b3c-1a2b3c4d5eff';

let upstream: StandInUpstream;
let forward: RunningGateway;
let keyed: RunningGateway;

beforeAll(async () => {
  upstream = await startStandInUpstream({ keys: [GOOD] });
  // A cache in front of the service must not answer for the verdicts.
  forward = await startForwardGateway(upstream.url, { API_KEYS: '', CACHE_TTL_MS: '60000' });
  keyed = await answeringGateway({ API_KEYS: 'dash:read+subscribe@acct-a,plain:read' });
});
afterAll(async () => {
  await Promise.all([forward.close(), keyed.close()]);
  await upstream.close();
});

const ids = () => upstream.transactions.map((transaction) => transaction.transactionId as string);
const probesOf = (key: string) =>
  upstream
    .callsTo('GET', '/transactions/')
    .filter((call) => call.authorization === key)
    .map((call) => call.path);
const as = (authorization: string) => ({ authorization, identity: { id: 'test', permissions: new Set(['read'] as const) } });

describe('in forward mode', () => {
  it('is offered to GraphQL operations as the gateway holds it', () => {
    expect(forward.gateway.app.graphql.services.accountAccess).toBe(forward.gateway.app.accountAccess);
  });

  it("asks the service with the client's key, once per key and account, through no cache", async () => {
    const access = forward.gateway.app.accountAccess;
    const [first, second] = ids();
    // The entity cache holds the transaction, read with the same key: the verdict is still the service's.
    await forward.gateway.app.backend.getTransaction(first!, as(GOOD));
    upstream.calls.length = 0;
    expect(await access.mayRead(as(GOOD), 'acct-a', first!)).toBe(true);
    expect(await access.mayRead(as(GOOD), 'acct-a', second!)).toBe(true);
    expect(probesOf(GOOD)).toEqual([`/transactions/${first}`]);
    expect(await access.mayRead(as('made-up'), 'acct-a', first!)).toBe(false);
    expect(await access.mayRead(as(GOOD), 'acct-b', UNKNOWN_ID)).toBe(false);
    expect(probesOf('made-up')).toHaveLength(1);
    expect(probesOf(GOOD)).toEqual([`/transactions/${first}`, `/transactions/${UNKNOWN_ID}`]);
  });

  it('judges each transaction of the default account on its own', async () => {
    const access = forward.gateway.app.accountAccess;
    const [, , third, fourth] = ids();
    upstream.calls.length = 0;
    expect(access.judgesEachTransaction('')).toBe(true);
    expect(await access.mayRead(as(GOOD), '', third!)).toBe(true);
    expect(await access.mayRead(as(GOOD), '', fourth!)).toBe(true);
    expect(await access.mayRead(as(GOOD), '', third!)).toBe(true);
    expect(probesOf(GOOD)).toEqual([`/transactions/${third}`, `/transactions/${fourth}`]);
  });

  it('reads the history of the first noted account whose transaction the key may read', async () => {
    const access = forward.gateway.app.accountAccess;
    access.note('acct-c', UNKNOWN_ID);
    access.note('acct-d', ids()[4]!);
    expect(await access.historyAccount(as(GOOD))).toBe('acct-d');
    expect(await access.historyAccount(as('made-up'))).toBe('');
  });
});

describe("with the gateway's own keys", () => {
  it('lets a key read its `@account` only, a key naming none the default account', async () => {
    const { authenticator } = keyed.gateway.app.auth;
    const access = keyed.gateway.app.accountAccess;
    const dash = await authenticator.authenticate('dash');
    const plain = await authenticator.authenticate('plain');
    expect(await access.mayRead(dash, 'acct-a', 'any')).toBe(true);
    expect(await access.mayRead(dash, '', 'any')).toBe(false);
    expect(await access.mayRead(plain, '', 'any')).toBe(true);
    expect(await access.historyAccount(dash)).toBe('acct-a');
    expect(await access.historyAccount(plain)).toBe('');
    expect(access.judgesEachTransaction('')).toBe(false);
    expect(keyed.gateway.app.graphql.services.accountAccess).toBe(access);
  });
});
