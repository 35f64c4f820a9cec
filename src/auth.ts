import type { Credential } from './backends/backend.js';
import { GatewayError } from './errors.js';
import { secretMatcher } from './http/secret-match.js';

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

export function createAuthenticator(apiKeys: readonly string[], upstreamCheck?: (authorization: string) => Promise<void>): Authenticator {
  const isAccepted = secretMatcher(apiKeys);
  return {
    async authenticate(authorization) {
      const header = authorization?.trim();
      if (!header) throw new GatewayError('UNAUTHENTICATED', 'Missing API key: send it in the Authorization header', {
          failsRequest: true,
        });
      if (apiKeys.length === 0) {
        // The key as forwarded is the key the upstream judges.
        await upstreamCheck?.(header);
        return { authorization: header };
      }
      if (!isAccepted(header.replace(/^Bearer\s+/i, ''))) {
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
