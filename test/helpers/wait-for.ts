/** Polls `condition` (awaited when it is asynchronous) until it holds or `timeoutMs` passes; returns whether it held. */
export async function waitFor(condition: () => boolean | Promise<boolean>, timeoutMs = 2_000, everyMs = 10): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await condition()) return true;
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
  return condition();
}
