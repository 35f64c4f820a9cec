/*
 * Readiness is made of named checks, each added by the feature that knows it
 * (the shutdown: accepting; the events: storable; the upstream: breaker not
 * open). /readyz and the readiness gauges read the same list, so a check
 * added by a new feature shows in both without either being told.
 */

export interface Readiness {
  /** Adds a check, true while it holds; answers list checks in the order they were added. */
  add(name: string, holds: () => boolean): void;
  /** Every check by name, read now. */
  checks(): Record<string, boolean>;
  /** Whether every check holds. */
  ready(): boolean;
}

export function createReadiness(): Readiness {
  const list: Array<[string, () => boolean]> = [];
  return {
    add(name, holds) {
      if (list.some(([taken]) => taken === name)) throw new Error(`readiness check "${name}" added twice`);
      list.push([name, holds]);
    },
    checks: () => Object.fromEntries(list.map(([name, holds]) => [name, holds()])),
    ready: () => list.every(([, holds]) => holds()),
  };
}
