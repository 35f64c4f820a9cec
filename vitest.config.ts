import { createRequire } from 'node:module';
import { defineConfig } from 'vitest/config';

const require = createRequire(import.meta.url);

export default defineConfig({
  resolve: {
    // graphql 16 ships CJS and ESM builds without an exports map: Node loads the
    // CJS one for yoga and Pothos, so our sources must too, or `instanceof
    // GraphQLError` fails across the two copies.
    alias: [{ find: /^graphql$/, replacement: require.resolve('graphql') }],
  },
  test: {
    include: ['test/**/*.test.ts'],
    // `npm start` runs dist/: built once, from the sources under test.
    globalSetup: ['test/build-dist.ts'],
    testTimeout: 20_000,
    hookTimeout: 20_000,
  },
});
