import { describe, expect, it } from 'vitest';
import { startSimulator } from '../../src/backends/memory/simulator.js';
import type { Transaction } from '../../src/contract/contract.js';
import { waitFor } from '../helpers/wait-for.js';
import { demoBackend } from '../helpers/gateway.js';
import { SYSTEM_IDENTITY } from '../../src/backends/backend.js';

describe('demo simulator', () => {
  it('moves random transactions through their lifecycle and reports each change', async () => {
    const backend = demoBackend();
    const changes: Transaction[] = [];
    backend.watchTransactionChanges?.((transaction) => changes.push(transaction));
    const stop = startSimulator(backend, 5);
    expect(await waitFor(() => changes.length >= 5)).toBe(true);
    stop();
    for (const change of changes) {
      expect(['pending', 'active', 'completed']).toContain(change.status);
      const stored = await backend.getTransaction(change.transactionId, { authorization: '', identity: SYSTEM_IDENTITY });
      expect(stored.transactionId).toBe(change.transactionId);
    }
    const count = changes.length;
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(changes.length).toBe(count);
  });
});

describe('demo simulator: machines', () => {
  it('now and then takes a machine offline or back online', async () => {
    const backend = demoBackend();
    const system = { authorization: '', identity: SYSTEM_IDENTITY };
    const states = async () => (await backend.listVendings({}, system)).map((vending) => vending.online).join();
    const first = await states();
    const stop = startSimulator(backend, 2);
    let changed = false;
    for (let tries = 0; tries < 200 && !changed; tries += 1) {
      await new Promise((resolve) => setTimeout(resolve, 5));
      changed = (await states()) !== first;
    }
    stop();
    expect(changed).toBe(true);
  });
});
