import { AsyncLocalStorage } from 'node:async_hooks';

/** What one request cost upstream; read by the request log. */
export interface RequestStats {
  upstreamCalls: number;
  upstreamMs: number;
}

// Backends know nothing of requests, so their calls are tallied against
// whichever request is running when they end.
const storage = new AsyncLocalStorage<RequestStats>();

export function runWithRequestStats<T>(work: () => T): T {
  return storage.run({ upstreamCalls: 0, upstreamMs: 0 }, work);
}

export function currentRequestStats(): RequestStats | undefined {
  return storage.getStore();
}

export function recordUpstreamCall(durationMs: number): void {
  const stats = storage.getStore();
  if (!stats) return;
  stats.upstreamCalls += 1;
  stats.upstreamMs += durationMs;
}
