/*
 * Readiness is made of named checks, each added by the feature that knows it
 * (the shutdown: accepting; the events: storable; the upstream: breaker not
 * open). /readyz and the readiness gauges read the same list, so a check
 * added by a new feature shows in both without either being told.
 */

export interface ReadinessCheckOptions {
  /**
   * Whether readiness fails while this check does. A check of a part the
   * instance serves without (the history's database: every other field, REST
   * and the live events go on) is named in the answers but fails nothing, so
   * a load balancer does not take away instances that still serve.
   * @default true
   */
  required?: boolean;
}

export interface Readiness {
  /** Adds a check, true while it holds; answers list checks in the order they were added. */
  add(name: string, holds: () => boolean, options?: ReadinessCheckOptions): void;
  /** Every check by name, read now. */
  checks(): Record<string, boolean>;
  /** Whether every required check holds. */
  ready(): boolean;
}

export function createReadiness(): Readiness {
  const list: Array<[string, () => boolean, boolean]> = [];
  return {
    add(name, holds, { required = true } = {}) {
      if (list.some(([taken]) => taken === name)) throw new Error(`readiness check "${name}" added twice`);
      list.push([name, holds, required]);
    },
    checks: () => Object.fromEntries(list.map(([name, holds]) => [name, holds()])),
    ready: () => list.every(([, holds, required]) => !required || holds()),
  };
}
