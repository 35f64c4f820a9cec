import { describe, expect, it } from 'vitest';
import type { Backend, Credential, VendingQuery } from '../../src/backends/backend.js';
import type { Transaction, Vending } from '../../src/contract/contract.js';
import { GatewayError } from '../../src/errors.js';
import { refuse } from '../../src/refusals/refusals.js';
import { createLoaders, isNotFound } from '../../src/graphql/loaders.js';
import { countingBackend } from '../helpers/counting-backend.js';
import { clientCredential } from '../helpers/credentials.js';

/*
 * The batching contract of the per-request loaders, DataLoader style: a
 * counting backend records what each batch became, and the fake behind it
 * makes every record name the credential and view it was read for, so a
 * result handed to the wrong key, credential or view shows.
 */

const ALICE: Credential = clientCredential('alice');
const BOB: Credential = clientCredential('bob');
const batching = { vendingListThreshold: 3, transactionConcurrency: 4 };

const transactionIds = Array.from({ length: 20 }, (_, i) => `t${i + 1}`);
const vendingIds = ['v1', 'v2', 'v3', 'v4', 'v5'];

/** Waits `turns` trips through the event loop: later keys answer sooner, so completion order is not key order. */
const turns = async (count: number) => {
  for (let i = 0; i < count; i++) await new Promise((resolve) => setImmediate(resolve));
};
const lateness = (id: string) => Math.max(0, 30 - (Number(id.slice(1)) || 0));

function fakeBackend(): Backend {
  const transaction = (id: string, credential: Credential): Transaction => ({
    transactionId: id,
    customerId: credential.authorization,
    products: [],
    status: 'active',
  });
  const vending = (id: string, query: VendingQuery, credential: Credential): Vending => ({
    vendingId: id,
    identifier: `${credential.authorization}/${query.products ?? 'default'}`,
  });
  const fail = (id: string) => {
    if (id === 'broken') throw new GatewayError('UPSTREAM_ERROR', 'Upstream answered 500 without an error message');
    throw refuse.notFound(id.startsWith('t') ? 'transaction' : 'vending', id);
  };
  return {
    async getTransaction(id, credential) {
      await turns(lateness(id));
      return transactionIds.includes(id) ? transaction(id, credential) : fail(id);
    },
    async getVending(id, query, credential) {
      await turns(lateness(id));
      return vendingIds.includes(id) ? vending(id, query, credential) : fail(id);
    },
    async listVendings(query, credential) {
      await turns(1);
      // Not in the order asked for: a list answers in its own order.
      return [...vendingIds].reverse().map((id) => vending(id, query, credential));
    },
    updatePayment: async () => ({}),
    close: async () => {},
  };
}

function setUp() {
  const backend = countingBackend(fakeBackend());
  return { backend, loaders: createLoaders(backend, ALICE, batching) };
}
const idsOf = (calls: Array<{ args: unknown[] }>) => calls.map((call) => call.args[0]);

describe('results', () => {
  it('come in key order, one per key, though the backend answers out of order', async () => {
    const { loaders } = setUp();
    const transactions = await loaders.transactionById.loadMany(['t3', 't1', 't2']);
    expect(transactions.map((t) => (t as Transaction).transactionId)).toEqual(['t3', 't1', 't2']);
    const fromSingles = await loaders.vendingById('flat').loadMany(['v2', 'v1']);
    expect(fromSingles.map((v) => (v as Vending).vendingId)).toEqual(['v2', 'v1']);
    const fromList = await loaders.vendingById(undefined).loadMany(['v2', 'v4', 'v1']);
    expect(fromList.map((v) => (v as Vending).vendingId)).toEqual(['v2', 'v4', 'v1']);
  });

  it('give a missing key its NOT_FOUND error and the others their records', async () => {
    const { loaders } = setUp();
    const [t1, tMissing, t2] = await loaders.transactionById.loadMany(['t1', 't404', 't2']);
    expect([t1, t2]).toMatchObject([{ transactionId: 't1' }, { transactionId: 't2' }]);
    expect(tMissing).toMatchObject({ code: 'NOT_FOUND', message: 'transaction "t404" was not found' });
    // Both ways of reading vendings: one list call (three ids) and single reads (two).
    for (const ids of [
      ['v1', 'v404', 'v2'],
      ['v404', 'v1'],
    ]) {
      const results = await setUp().loaders.vendingById(undefined).loadMany(ids);
      expect(results.map((r) => (isNotFound(r) ? 'NOT_FOUND' : (r as Vending).vendingId))).toEqual(
        ids.map((id) => (id === 'v404' ? 'NOT_FOUND' : id)),
      );
      expect(results[ids.indexOf('v404')]).toBeInstanceOf(GatewayError);
    }
  });

  it('give a key whose read failed its error, and do not fail the other keys', async () => {
    const { loaders } = setUp();
    const [a, broken, b] = await loaders.transactionById.loadMany(['t1', 'broken', 't2']);
    expect([a, b]).toMatchObject([{ transactionId: 't1' }, { transactionId: 't2' }]);
    expect(broken).toMatchObject({ code: 'UPSTREAM_ERROR' });
    const [v, vBroken] = await loaders.vendingById(undefined).loadMany(['v1', 'broken']);
    expect(v).toMatchObject({ vendingId: 'v1' });
    expect(vBroken).toMatchObject({ code: 'UPSTREAM_ERROR' });
  });
});

describe('backend calls', () => {
  it('read a key asked for several times once', async () => {
    const { backend, loaders } = setUp();
    const [many, again] = await Promise.all([loaders.transactionById.loadMany(['t1', 't2', 't1']), loaders.transactionById.load('t1')]);
    expect(many).toHaveLength(3);
    expect(again).toMatchObject({ transactionId: 't1' });
    await loaders.transactionById.load('t2');
    expect(idsOf(backend.callsTo('getTransaction'))).toEqual(['t1', 't2']);
  });

  it('read a batch of at least vendingListThreshold ids with one list call, and a smaller one with a call per id', async () => {
    const atThreshold = setUp();
    await atThreshold.loaders.vendingById('planogram').loadMany(['v1', 'v2', 'v3']);
    expect(atThreshold.backend.calls).toEqual([{ method: 'listVendings', args: [{ products: 'planogram' }, ALICE] }]);

    const below = setUp();
    await below.loaders.vendingById('planogram').loadMany(['v1', 'v2']);
    expect(below.backend.calls).toEqual([
      { method: 'getVending', args: ['v1', { products: 'planogram' }, ALICE] },
      { method: 'getVending', args: ['v2', { products: 'planogram' }, ALICE] },
    ]);
  });

  it('keep at most transactionConcurrency transaction reads in flight, and read every id', async () => {
    const { backend, loaders } = setUp();
    const results = await loaders.transactionById.loadMany(transactionIds);
    expect(results.map((t) => (t as Transaction).transactionId)).toEqual(transactionIds);
    expect(backend.callsTo('getTransaction')).toHaveLength(transactionIds.length);
    expect(backend.maxInFlight).toBe(batching.transactionConcurrency);
  });

  it('are not needed for a vending a list already brought, in the same view only', async () => {
    const { backend, loaders } = setUp();
    await loaders.listVendings('flat');
    expect(await loaders.vendingById('flat').load('v2')).toMatchObject({ identifier: 'alice/flat' });
    expect(backend.calls.map((call) => call.method)).toEqual(['listVendings']);
    expect(await loaders.vendingById('planogram').load('v2')).toMatchObject({ identifier: 'alice/planogram' });
    expect(backend.calls.map((call) => call.method)).toEqual(['listVendings', 'getVending']);
  });

  it('are made again for a transaction once it is forgotten', async () => {
    const { backend, loaders } = setUp();
    await loaders.transactionById.load('t1');
    loaders.forgetTransaction('t1');
    await loaders.transactionById.load('t1');
    expect(idsOf(backend.callsTo('getTransaction'))).toEqual(['t1', 't1']);
  });
});

describe('credentials', () => {
  it("never share a result: each credential's loaders read with it and get its own records", async () => {
    const backend = countingBackend(fakeBackend());
    const alice = createLoaders(backend, ALICE, batching);
    const bob = createLoaders(backend, BOB, batching);
    const [aliceTx, bobTx, aliceList, bobList, aliceOne, bobOne] = await Promise.all([
      alice.transactionById.load('t1'),
      bob.transactionById.load('t1'),
      alice.vendingById(undefined).loadMany(['v1', 'v2', 'v3']),
      bob.vendingById(undefined).loadMany(['v1', 'v2', 'v3']),
      alice.vendingById('flat').load('v4'),
      bob.vendingById('flat').load('v4'),
    ]);
    expect([aliceTx.customerId, bobTx.customerId]).toEqual(['alice', 'bob']);
    expect(aliceList.map((v) => (v as Vending).identifier)).toEqual(Array(3).fill('alice/default'));
    expect(bobList.map((v) => (v as Vending).identifier)).toEqual(Array(3).fill('bob/default'));
    expect([aliceOne.identifier, bobOne.identifier]).toEqual(['alice/flat', 'bob/flat']);
    // Each credential made its own reads: nothing was answered from the other's.
    const by = (credential: Credential) => backend.calls.filter((call) => call.args.at(-1) === credential).map((call) => call.method);
    expect(by(ALICE).sort()).toEqual(['getTransaction', 'getVending', 'listVendings']);
    expect(by(BOB).sort()).toEqual(['getTransaction', 'getVending', 'listVendings']);
  });
});
