import { hash, timingSafeEqual } from 'node:crypto';

/*
 * Whether a presented secret (the metrics token; API keys are looked up by
 * digest in auth/key-store.ts) is one of those configured: SHA-256 digests
 * compared in constant time, so a secret cannot be guessed byte by byte from
 * answer times.
 */

// One-shot hashing: no Hash object per request.
const digest = (value: string): Buffer => hash('sha256', value, 'buffer');

export function secretMatcher(secrets: readonly string[]): (presented: string) => boolean {
  const accepted = secrets.map(digest);
  return (presented) => {
    const candidate = digest(presented);
    return accepted.some((secret) => timingSafeEqual(secret, candidate));
  };
}
