import type { Backend } from '../../src/backends/backend.js';

export type BackendCall = { method: keyof Backend; args: unknown[] };

/** Wraps a backend and records every call, so tests can count what reached it. */
export function countingBackend<B extends Backend>(inner: B): B & { calls: BackendCall[]; callsTo(method: keyof Backend): BackendCall[] } {
  const calls: BackendCall[] = [];
  const wrapped = Object.create(inner) as B & { calls: BackendCall[]; callsTo(method: keyof Backend): BackendCall[] };
  for (const method of ['getTransaction', 'getVending', 'listVendings', 'updatePayment'] as const) {
    (wrapped as unknown as Record<string, unknown>)[method] = (...args: unknown[]) => {
      calls.push({ method, args });
      return (inner[method] as (...a: unknown[]) => unknown).apply(inner, args);
    };
  }
  wrapped.calls = calls;
  wrapped.callsTo = (method) => calls.filter((call) => call.method === method);
  return wrapped;
}
