import { hash, timingSafeEqual } from 'node:crypto';
import type { Credential } from './backends/backend.js';
import { GatewayError } from './errors.js';

/**
 * Who may call the gateway. With keys, a client must present one of them
 * (contract part 5: "Bearer " is unconfirmed there, so it is accepted and
 * optional). Without keys the gateway forwards each client's own header and
 * the upstream decides: the header must be present, and `upstreamCheck`
 * (forward mode, src/upstream-key-check.ts) must accept it.
 */
export interface Authenticator {
  /** The credential of a request's `Authorization`. Throws a request-failing GatewayError when refused. */
  authenticate(authorization: string | null | undefined): Promise<Credential>;
}

// One-shot hashing: no Hash object per request.
const digest = (value: string): Buffer => hash('sha256', value, 'buffer') as unknown as Buffer;

export function createAuthenticator(apiKeys: readonly string[], upstreamCheck?: (authorization: string) => Promise<void>): Authenticator {
  // Compare digests in constant time so a key cannot be guessed byte by byte.
  const accepted = apiKeys.map(digest);
  return {
    async authenticate(authorization) {
      const header = authorization?.trim();
      if (!header) throw new GatewayError('UNAUTHENTICATED', 'Missing API key: send it in the Authorization header', {
          failsRequest: true,
        });
      if (accepted.length === 0) {
        // The key as forwarded is the key the upstream judges.
        await upstreamCheck?.(header);
        return { authorization: header };
      }
      const presented = digest(header.replace(/^Bearer\s+/i, ''));
      if (!accepted.some((key) => timingSafeEqual(key, presented))) {
        throw new GatewayError('UNAUTHENTICATED', 'Unknown API key', { failsRequest: true });
      }
      return { authorization: header };
    },
  };
}

/**
 * The front door's guard for routes that need a key (REST, GraphQL): runs
 * before the body is read, so a request without a valid key costs no parsing;
 * leaves the credential in the request's scope.
 */
export function requestGuard(authenticator: Authenticator, admit: (credential: Credential) => Promise<void>) {
  return async (request: { headers: Record<string, string | string[] | undefined>; scope: { credential: Credential | undefined } }): Promise<void> => {
    const header = request.headers.authorization;
    const credential = await authenticator.authenticate(typeof header === 'string' ? header : undefined);
    await admit(credential);
    request.scope.credential = credential;
  };
}
