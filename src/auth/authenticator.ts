import type { Credential } from '../backends/backend.js';
import type { GatewayError } from '../errors.js';
import { refuse } from '../refusals/refusals.js';
import { looksLikeJwt, type JwtVerifier } from './jwt-verifier.js';
import type { KeyStore } from './key-store.js';
import { ALL_PERMISSIONS, keyIdentity } from './permissions.js';

/**
 * Who may call the gateway. With keys (and tokens), a client must present one
 * of them (contract part 5: "Bearer " is unconfirmed there, so it is accepted
 * and optional for keys); each comes with its identity and permissions.
 * Without keys the gateway forwards each client's own key (without an
 * optional "Bearer ") and the upstream decides: the header must be present,
 * and `upstream` (forward mode, src/auth/upstream-key-check.ts) must accept
 * the key; such a key may do all the upstream lets it.
 */
export interface Authenticator {
  /** The credential of a request's `Authorization`. Throws a request-failing GatewayError when refused. */
  authenticate(authorization: string | null | undefined): Promise<Credential>;
  /**
   * Present when an accepted credential can stop being accepted while a
   * subscription made with it is open (a key file, tokens, forward mode):
   * calls `onRefused` once when that happens. Returns the function that ends the watch.
   */
  watch?(credential: Credential, onRefused: (error: GatewayError) => void): () => void;
}

export interface AuthenticatorOptions {
  /** The gateway's own keys; absent in forward mode. */
  keys?: KeyStore | undefined;
  /** Tokens, besides keys. */
  jwt?: JwtVerifier | undefined;
  /** Forward mode: asks the upstream about a client's own key. */
  upstream?:
    | { check(authorization: string): Promise<void>; watch(authorization: string, onRefused: (error: GatewayError) => void): () => void }
    | undefined;
  /** Whether keys can change while the gateway runs (API_KEYS_FILE). @default false */
  keysChange?: boolean;
}

/** setTimeout's longest delay; a later expiry is simply not watched for. */
const MAX_DELAY_MS = 2 ** 31 - 1;

export function createAuthenticator(options: AuthenticatorOptions): Authenticator {
  const { keys, jwt, upstream } = options;

  async function authenticate(authorization: string | null | undefined): Promise<Credential> {
    const header = authorization?.trim();
    if (!header) throw refuse.missingKey(true);
    const presented = header.replace(/^Bearer\s+/i, '');
    if (!keys) {
      // Forward mode sends the bare key: "Bearer " is optional for a client (the docs show it), and the
      // service is not known to take it (contract part 5). The key as forwarded is the key the upstream
      // judges, and one key is one identity (verdicts, rate limits) whichever way it came.
      await upstream?.check(presented);
      return { authorization: presented, identity: keyIdentity(presented, ALL_PERMISSIONS) };
    }
    const identity = keys.lookup(presented);
    if (identity) return { authorization: presented, identity };
    if (!jwt || !looksLikeJwt(presented)) throw refuse.unknownKey();
    return { authorization: presented, identity: await jwt.verify(presented) };
  }

  function watchToken(credential: Credential, onRefused: (error: GatewayError) => void): () => void {
    const expiresAt = credential.identity?.expiresAt;
    if (expiresAt === undefined || expiresAt - Date.now() > MAX_DELAY_MS) return () => {};
    const timer = setTimeout(() => onRefused(refuse.tokenExpired()), Math.max(0, expiresAt - Date.now()));
    timer.unref();
    return () => clearTimeout(timer);
  }

  function watchKey(store: KeyStore, credential: Credential, onRefused: (error: GatewayError) => void): () => void {
    const key = credential.authorization;
    if (!store.lookup(key)) return watchToken(credential, onRefused);
    let stop = () => {};
    const account = credential.identity.account;
    stop = store.watch(key, (identity) => {
      // A subscription shows one account's events: the key's move to another ends it, as a revocation would.
      if (identity && identity.permissions.has('subscribe') && identity.account === account) return;
      stop();
      onRefused(
        !identity ? refuse.keyRevoked() : identity.permissions.has('subscribe') ? refuse.keyMovedAccount() : refuse.lostSubscribe(),
      );
    });
    return () => stop();
  }

  const watch: Authenticator['watch'] = upstream
    ? (credential, onRefused) => upstream.watch(credential.authorization, onRefused)
    : keys && (options.keysChange || jwt)
      ? (credential, onRefused) => watchKey(keys, credential, onRefused)
      : undefined;
  return watch ? { authenticate, watch } : { authenticate };
}

/**
 * The front door's guard for routes that need a key (REST, GraphQL): runs
 * before the body is read, so a request without a valid key costs no parsing;
 * leaves the credential in the request's scope.
 */
export function requestGuard(authenticator: Authenticator, admit: (credential: Credential) => Promise<void>) {
  return async (request: {
    headers: Record<string, string | string[] | undefined>;
    scope: { credential: Credential | undefined };
  }): Promise<void> => {
    const header = request.headers.authorization;
    request.scope.credential = await admitted(authenticator, admit, typeof header === 'string' ? header : undefined);
  };
}

/**
 * Who sends `authorization`, once counted against its key's rate limit: what every request passes, whichever
 * transport brought it (the front door's guard, or the GraphQL context of a WebSocket operation). Throws
 * `UNAUTHENTICATED` or `RATE_LIMITED`.
 */
export async function admitted(
  authenticator: Authenticator,
  admit: (credential: Credential) => Promise<void>,
  authorization: string | null | undefined,
): Promise<Credential> {
  const credential = await authenticator.authenticate(authorization);
  await admit(credential);
  return credential;
}
