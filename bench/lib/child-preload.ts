/*
 * Loaded with `--import` into every child the harness starts (gateway, upstream,
 * peers), so no bench code has to live in src/:
 * - the child exits when the harness goes away, even if the harness was killed
 *   with SIGKILL and could not clean up (its IPC channel closes);
 * - SIGUSR2 runs a full garbage collection (with --expose-gc), so memory read
 *   from /metrics afterwards is live data, not garbage not yet collected.
 */

if (process.connected) process.on('disconnect', () => process.exit(0));

process.on('SIGUSR2', () => {
  const gc = (globalThis as { gc?: () => void }).gc;
  // Twice: the first pass can only free what the second finds unreachable after finalisers.
  gc?.();
  gc?.();
});
