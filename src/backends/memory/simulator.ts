import { SYSTEM_IDENTITY } from '../backend.js';
import type { MemoryBackend } from './memory-backend.js';

/** The order a demo sale moves through; the last wraps to the first so the demo never runs dry. */
const lifecycle = ['pending', 'active', 'completed'];

/** One tick in this many also flips a random machine online or offline, so the machines' panel has something to show. */
const MACHINE_EVERY = 10;

/**
 * Changes a random demo transaction every `intervalMs`, as sales would at the
 * service, and now and then takes a random machine offline or back online, so
 * a newcomer sees live events at once. Returns a stop function.
 */
export function startSimulator(backend: MemoryBackend, intervalMs: number, random: () => number = Math.random): () => void {
  let ticks = 0;
  const timer = setInterval(() => {
    if (++ticks % MACHINE_EVERY === 0) {
      const machines = backend.vendingIds();
      const machine = machines[Math.floor(random() * machines.length)];
      if (machine !== undefined) {
        void backend.listVendings({}, { authorization: '', identity: SYSTEM_IDENTITY }).then((all) => {
          const online = all.find((vending) => vending.vendingId === machine)?.online;
          backend.setVendingState(machine, { online: online === false });
        });
      }
    }
    const ids = backend.transactionIds();
    const id = ids[Math.floor(random() * ids.length)];
    if (id === undefined) return;
    void backend.getTransaction(id, { authorization: '', identity: SYSTEM_IDENTITY }).then((transaction) => {
      const at = lifecycle.indexOf(transaction.status);
      backend.setTransactionStatus(id, lifecycle[(at + 1) % lifecycle.length] as string);
    });
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}

/**
 * Runs the simulator while someone asks for it: each `acquire()` holds it on
 * until its release is called (the dashboard page asks while it is open).
 */
export function createSimulatorControl(backend: MemoryBackend, intervalMs: number): { acquire(): () => void } {
  let holders = 0;
  let stop: (() => void) | undefined;
  return {
    acquire() {
      holders += 1;
      stop ??= startSimulator(backend, intervalMs);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        holders -= 1;
        if (holders === 0) {
          stop?.();
          stop = undefined;
        }
      };
    },
  };
}
