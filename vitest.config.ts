import { createRequire } from 'node:module';
import { defineConfig } from 'vitest/config';

const require = createRequire(import.meta.url);

/*
 * The suite in tiers, each a folder of test/ and a vitest project that runs
 * alone by name (`npm run test:unit`, `vitest run --project engines`);
 * `npm test` runs them all.
 *   unit     in process: no socket, port, child process or engine (test/unit-tier-guard.ts refuses them)
 *   e2e      a real gateway, process or socket; answers checked through app.inject() where the socket is not the point
 *   engines  real Redis and PostgreSQL: servers of the test's own (killed, paused, clustered), databases of its own
 *   browser  Debian's Chromium driving the dashboard, GraphiQL and the browser recipes
 *   faults   what an attacker or a failing dependency does
 *   fuzz     random inputs over every surface, and the differential of the GraphQL paths
 */

interface Tier {
  /** Folders of test/ whose *.test.ts files the tier runs. */
  dirs: string[];
  setupFiles?: string[];
}

const tiers: Record<string, Tier> = {
  unit: { dirs: ['unit', 'property'], setupFiles: ['test/unit-tier-guard.ts'] },
  e2e: { dirs: ['e2e'] },
  engines: { dirs: ['engines'] },
  browser: { dirs: ['browser'] },
  faults: { dirs: ['faults'] },
  fuzz: { dirs: ['fuzz'] },
};

export default defineConfig({
  resolve: {
    // graphql 16 ships CJS and ESM builds without an exports map: Node loads the
    // CJS one for yoga and Pothos, so our sources must too, or `instanceof
    // GraphQLError` fails across the two copies.
    alias: [{ find: /^graphql$/, replacement: require.resolve('graphql') }],
  },
  test: {
    // Most of a file's time is spent waiting (on a socket, a timer, a Redis failover): on two cores, four files at
    // once finish the suite in half the time of one, with the machine still answering every test's deadline.
    maxWorkers: 4,
    testTimeout: 20_000,
    hookTimeout: 20_000,
    projects: Object.entries(tiers).map(([name, tier]) => ({
      extends: true,
      test: {
        name,
        include: tier.dirs.map((dir) => `test/${dir}/**/*.test.ts`),
        // `npm start` runs dist/, and the gateways started in process serve the dashboard from dist/web/: built once,
        // from the sources under test, for every tier that starts one.
        globalSetup: name === 'unit' ? [] : ['test/build-dist.ts'],
        setupFiles: tier.setupFiles ?? [],
      },
    })),
  },
});
