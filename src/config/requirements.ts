import { webhookSecrets } from './webhook-secrets.js';
import type { Values, VariableName } from './spec.js';

/*
 * Rules that combine variables, each written once: the parser enforces them
 * in this order and the docs print their `when` beside the variable.
 */

export const isProduction = (values: Values): boolean => values.NODE_ENV === 'production';

/** Forward mode: the upstream judges each client's own key, so API_KEYS is not used. */
export const isForwardMode = (values: Values): boolean => values.BACKEND === 'rest' && values.UPSTREAM_API_KEY === undefined;

export interface Requirement {
  variable: VariableName;
  /** Completes "<variable> must be set …" (or "must be unset …" with `unset`). */
  when: string;
  /** The variable must be unset, not set, when the requirement holds. */
  unset?: boolean;
  /** True when the variable is missing although it is required; `given` names the variables set in the environment. */
  missing(values: Values, given: ReadonlySet<VariableName>): boolean;
}

export const requirements: readonly Requirement[] = [
  {
    variable: 'UPSTREAM_URL',
    when: 'when BACKEND=rest',
    missing: (values) => values.BACKEND === 'rest' && values.UPSTREAM_URL === undefined,
  },
  {
    variable: 'API_KEYS',
    when: 'when NODE_ENV=production, unless API_KEYS_FILE or JWT_JWKS_URL is set, or BACKEND=rest without UPSTREAM_API_KEY (forward mode)',
    missing: (values, given) =>
      isProduction(values) &&
      !isForwardMode(values) &&
      !['API_KEYS', 'API_KEYS_FILE', 'JWT_JWKS_URL'].some((name) => given.has(name as VariableName)),
  },
  // In forward mode the upstream judges each client's own header: the gateway's keys and tokens would be bypassed.
  {
    variable: 'UPSTREAM_API_KEY',
    when: 'when BACKEND=rest and API_KEYS_FILE or JWT_JWKS_URL is set',
    missing: (values) => isForwardMode(values) && (values.API_KEYS_FILE !== undefined || values.JWT_JWKS_URL !== undefined),
  },
  // A token from any issuer, or meant for any service, that the JWKS happens to sign would be accepted.
  {
    variable: 'JWT_ISSUER',
    when: 'when JWT_JWKS_URL is set',
    missing: (values) => values.JWT_JWKS_URL !== undefined && values.JWT_ISSUER === undefined,
  },
  {
    variable: 'JWT_AUDIENCE',
    when: 'when JWT_JWKS_URL is set',
    missing: (values) => values.JWT_JWKS_URL !== undefined && values.JWT_AUDIENCE.length === 0,
  },
  // Unsigned webhooks let anyone publish events to every subscriber: in production only on request. A secret alone
  // counts (an account's own checks only its path).
  {
    variable: 'WEBHOOK_SECRET',
    when: 'when NODE_ENV=production (or WEBHOOK_UNSIGNED=allow to accept unsigned webhooks)',
    missing: (values, given) =>
      isProduction(values) && !given.has('WEBHOOK_UNSIGNED') && webhookSecrets(values.WEBHOOK_SECRET).plain.length === 0,
  },
  {
    variable: 'WEBHOOK_SECRET',
    when: 'when WEBHOOK_UNSIGNED=refuse',
    missing: (values) => values.WEBHOOK_UNSIGNED === 'refuse' && webhookSecrets(values.WEBHOOK_SECRET).plain.length === 0,
  },
  // One Redis deployment is shared: two named would leave it to chance which one the instances agree on.
  {
    variable: 'REDIS_CLUSTER_NODES',
    when: 'when REDIS_URL is set (name one Redis: REDIS_URL, REDIS_CLUSTER_NODES or REDIS_SENTINELS)',
    unset: true,
    missing: (values) => values.REDIS_URL !== undefined && values.REDIS_CLUSTER_NODES.length > 0,
  },
  {
    variable: 'REDIS_SENTINELS',
    when: 'when REDIS_URL or REDIS_CLUSTER_NODES is set (name one Redis: REDIS_URL, REDIS_CLUSTER_NODES or REDIS_SENTINELS)',
    unset: true,
    missing: (values) => (values.REDIS_URL !== undefined || values.REDIS_CLUSTER_NODES.length > 0) && values.REDIS_SENTINELS.length > 0,
  },
  {
    variable: 'REDIS_SENTINEL_MASTER',
    when: 'when REDIS_SENTINELS is set',
    missing: (values) => values.REDIS_SENTINELS.length > 0 && values.REDIS_SENTINEL_MASTER === undefined,
  },
  {
    variable: 'REDIS_SENTINELS',
    when: 'when REDIS_SENTINEL_MASTER is set',
    missing: (values) => values.REDIS_SENTINEL_MASTER !== undefined && values.REDIS_SENTINELS.length === 0,
  },
];
