import { hash } from 'node:crypto';
import { createRemoteJWKSet, errors, jwtVerify, type JWTPayload } from 'jose';
import type { Identity } from '../backends/backend.js';
import { PERMISSIONS, type JwtConfig, type Permission } from '../config/config.js';
import { accountProblem } from '../contract/accounts.js';
import type { GatewayError } from '../errors.js';
import { refuse } from '../refusals/refusals.js';

/*
 * Tokens signed by a key of the JWKS at JWT_JWKS_URL, verified by jose
 * (panva/jose): its remote key set fetches the JWKS when first needed, keeps
 * it, and fetches it again for a `kid` it does not know, at most once per
 * cooldown, so a rotated key is picked up without a flood of fetches. The
 * algorithms are an allowlist of asymmetric ones: `alg: none` is never a
 * signature to jose, and HS256 "signed" with the public key (the classic
 * confusion attack) is refused for its algorithm before any key is tried.
 *
 * A signature check costs 130–190 µs of CPU (ES256, RS256, EdDSA on this VM),
 * as much as the rest of a small query, and a dashboard sends the same token
 * with every request: a token that verified is remembered (by its digest)
 * until its `exp`, and at most VERIFIED_TTL_MS, so a key withdrawn from the
 * JWKS stops its tokens within that time (at once after SIGHUP).
 *
 * A token must carry `exp`: one without it would be a credential forever,
 * however it leaked, and a verified token is remembered until its `exp`.
 *
 * With JWT_ACCOUNT_CLAIM a token belongs to the account that claim names,
 * and a token whose claim is missing or names no valid account is refused:
 * a provider that stopped sending the claim must not land its users in the
 * default account, which may hold another account's transactions. Without
 * it every token is of the default account.
 */

export interface JwtVerifier {
  /** The token's identity; throws UNAUTHENTICATED (refused) or UPSTREAM_UNAVAILABLE (the key set cannot be had now). */
  verify(token: string): Promise<Identity>;
  /** Forgets the fetched key set and the tokens verified with it: the next token fetches it again (SIGHUP). */
  reload(): void;
}

/** Compact JWS: three base64url parts, the last possibly empty (as `alg: none` makes it). */
export const looksLikeJwt = (text: string): boolean => /^[\w-]+\.[\w-]+\.[\w-]*$/.test(text);

/** Longest a verified token is taken without checking it again. */
const VERIFIED_TTL_MS = 60_000;
/** Most verified tokens remembered; past it the oldest is forgotten. */
const MAX_VERIFIED = 10_000;

/** Longest `sub` used as an identity as it is; a longer or odder one is named by its digest. */
const MAX_SUBJECT = 64;
const SUBJECT = new RegExp(`^[\\x21-\\x7e]{1,${MAX_SUBJECT}}$`);

function identityOf(token: string, payload: JWTPayload, config: JwtConfig): Identity {
  const { sub } = payload;
  // A long or odd subject is named by its digest; a token without one is an identity of its own.
  const id =
    typeof sub === 'string' && SUBJECT.test(sub)
      ? `sub:${sub}`
      : `sub-${hash('sha256', typeof sub === 'string' ? sub : token, 'hex').slice(0, 12)}`;
  const value = payload[config.permissionsClaim];
  // An array (`permissions`), or a space-separated string as OAuth's `scope` is; other words are another service's.
  const words = Array.isArray(value) ? value : typeof value === 'string' ? value.split(' ') : [];
  const permissions = words.filter((word): word is Permission => (PERMISSIONS as readonly unknown[]).includes(word));
  const identity: Identity = {
    id,
    permissions: new Set(permissions),
    expiresAt: typeof payload.exp === 'number' ? payload.exp * 1_000 : undefined,
  };
  if (config.accountClaim === undefined) return identity;
  const account = payload[config.accountClaim];
  if (typeof account !== 'string' || accountProblem(account) !== undefined) throw refuse.jwtAccountMissing(config.accountClaim);
  return { ...identity, account };
}

/** What a client is told of a token jose refused: what is wrong, never the token. */
function refusal(error: unknown): GatewayError {
  if (error instanceof errors.JWTExpired) return refuse.jwtExpired();
  if (error instanceof errors.JWTClaimValidationFailed && error.claim === 'exp' && error.reason === 'missing')
    return refuse.jwtNeverExpires();
  if (error instanceof errors.JWTClaimValidationFailed) return refuse.jwtClaimRefused(error.claim);
  if (error instanceof errors.JOSEAlgNotAllowed) return refuse.jwtAlgorithmRefused();
  if (error instanceof errors.JWKSNoMatchingKey) return refuse.jwtKeyUnknown();
  if (error instanceof errors.JWSSignatureVerificationFailed) return refuse.jwtSignatureInvalid();
  return refuse.notAJwt();
}

/** The key set could not be fetched (unreachable, too slow, not a JWKS): nothing is known of the token yet. */
function keySetUnavailable(error: unknown): boolean {
  if (error instanceof errors.JWKSTimeout || error instanceof errors.JWKSInvalid) return true;
  if (!(error instanceof errors.JOSEError)) return true;
  return error.code === 'ERR_JOSE_GENERIC';
}

export function createJwtVerifier(config: JwtConfig): JwtVerifier {
  const url = new URL(config.jwksUrl);
  let keySet = createRemoteJWKSet(url);
  // Map order is insertion order: the first entry is the oldest.
  const verified = new Map<string, { identity: Identity; until: number }>();
  const options = {
    issuer: config.issuer,
    audience: config.audience,
    clockTolerance: config.clockSkewS,
    algorithms: config.algorithms,
    // A token without `exp` never expires: a credential forever, whoever holds it. Every identity provider sets one.
    requiredClaims: ['exp'],
  };
  return {
    async verify(token) {
      const digest = hash('sha256', token, 'base64');
      const known = verified.get(digest);
      if (known && known.until > Date.now()) return known.identity;
      verified.delete(digest);
      let payload: JWTPayload;
      try {
        ({ payload } = await jwtVerify(token, keySet, options));
      } catch (error) {
        if (!keySetUnavailable(error)) throw refusal(error);
        throw refuse.keySetUnavailable(error);
      }
      const identity = identityOf(token, payload, config);
      if (verified.size >= MAX_VERIFIED) verified.delete(verified.keys().next().value!);
      verified.set(digest, { identity, until: Math.min(identity.expiresAt ?? Number.POSITIVE_INFINITY, Date.now() + VERIFIED_TTL_MS) });
      return identity;
    },
    reload() {
      keySet = createRemoteJWKSet(url);
      verified.clear();
    },
  };
}
