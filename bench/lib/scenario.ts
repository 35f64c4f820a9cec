import type { Child } from './children.js';
import type { Measurement } from './http-load.js';
import type { Upstream } from './servers.js';
import type { Row } from './table.js';

export interface ScenarioContext {
  upstream: Upstream;
  /** Figures a later scenario may reuse, e.g. S7 compares Apollo with S1/S2's gateway figures. */
  shared: Map<string, Measurement>;
  log(message: string): void;
}

export interface Scenario {
  name: string;
  title: string;
  run(ctx: ScenarioContext): Promise<Row[]>;
}

export const withChild = <T, C extends { stop(): Promise<unknown> } = Child>(start: Promise<C>, use: (child: C) => Promise<T>) =>
  withChildren([() => start], ([child]) => use(child!));

/** Runs `use` with children started one after the other, and stops every one started whatever happens. */
export async function withChildren<T, C extends { stop(): Promise<unknown> } = Child>(
  starts: Array<() => Promise<C>>,
  use: (children: C[]) => Promise<T>,
): Promise<T> {
  const children: C[] = [];
  try {
    for (const start of starts) children.push(await start());
    return await use(children);
  } finally {
    await Promise.all(children.map((child) => child.stop()));
  }
}
