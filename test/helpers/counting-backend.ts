import type { Backend } from '../../src/backends/backend.js';

export type BackendCall = { method: keyof Backend; args: unknown[] };

export interface Counting {
  calls: BackendCall[];
  callsTo(method: keyof Backend): BackendCall[];
  /** Calls started and not yet settled. */
  inFlight: number;
  /** The most calls that were in flight at once. */
  maxInFlight: number;
}

/** Wraps a backend and records every call, so tests can count what reached it and how many ran at once. */
export function countingBackend<B extends Backend>(inner: B): B & Counting {
  const calls: BackendCall[] = [];
  const wrapped = Object.create(inner) as B & Counting;
  for (const method of ['getTransaction', 'getVending', 'listVendings', 'updatePayment'] as const) {
    (wrapped as unknown as Record<string, unknown>)[method] = async (...args: unknown[]) => {
      // An optional scope left out is recorded as left out, whoever passed it as undefined.
      const given = args.length > 0 && args[args.length - 1] === undefined ? args.slice(0, -1) : args;
      calls.push({ method, args: given });
      wrapped.maxInFlight = Math.max(wrapped.maxInFlight, ++wrapped.inFlight);
      try {
        return await (inner[method] as (...a: unknown[]) => unknown).apply(inner, args);
      } finally {
        wrapped.inFlight--;
      }
    };
  }
  wrapped.calls = calls;
  wrapped.callsTo = (method) => calls.filter((call) => call.method === method);
  wrapped.inFlight = 0;
  wrapped.maxInFlight = 0;
  return wrapped;
}
