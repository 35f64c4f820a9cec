if (process.connected) process.on('disconnect', () => process.exit(0));

process.on('SIGUSR2', () => {
  const gc = (globalThis as { gc?: () => void }).gc;
  // Twice: the first pass can only free what the second finds unreachable after finalisers.
  gc?.();
  gc?.();
});
