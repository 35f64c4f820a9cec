import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';
import { importX } from 'eslint-plugin-import-x';
import type { Linter } from 'eslint';
import { defineConfig, globalIgnores } from 'eslint/config';
import tseslint from 'typescript-eslint';
import { forbiddenImports } from './scripts/layers.js';

/*
 * `npm run lint`: typescript-eslint with type information over every source
 * the project writes, the layering of src/ as an import rule, and no rule of
 * layout (Prettier owns that: `npm run format`, checked by `format:check`).
 */

/** The imports of src/ point one way (scripts/layers.ts): each part imports only what lies below it. */
export const layering: Linter.Config = {
  files: ['src/**/*.ts'],
  languageOptions: { parser: tseslint.parser },
  plugins: { 'import-x': importX },
  settings: { 'import-x/resolver-next': [createTypeScriptImportResolver({ project: 'tsconfig.json' })] },
  rules: { 'import-x/no-restricted-paths': ['error', { zones: forbiddenImports() }] },
};

export default defineConfig(
  globalIgnores([
    'dist/',
    'coverage/',
    'node_modules/',
    'src/graphql/generated/',
    'test/client-consumer/',
    'test/fixtures/*.js',
    'packages/*/dist/',
  ]),
  js.configs.recommended,
  tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      // The dashboard's browser code has a program of its own (DOM types, no Node).
      parserOptions: { project: ['tsconfig.json', 'tsconfig.web.json'], tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // An async function that awaits nothing still turns its throws into rejections, which callers of an
      // interface that returns a promise (a backend, a store) rely on: `async` there is the contract, not a slip.
      '@typescript-eslint/require-await': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      // The services are objects of closures, which use no `this`, typed by interfaces in method syntax: handing
      // `store.read` around is safe here, and the rule cannot tell such an object from a class instance.
      '@typescript-eslint/unbound-method': 'off',
      // A promise settled by hand passes on the failure it was given (a caught error, undici's abort reason) as it is.
      '@typescript-eslint/prefer-promise-reject-errors': ['error', { allowThrowingAny: true, allowThrowingUnknown: true }],
      // Prettier breaks code at 140 columns but leaves comments and strings as written: this holds those too.
      'max-len': ['error', { code: 140, tabWidth: 2 }],
    },
  },
  {
    // Where envelop, yoga and graphql-ws hand over their arguments as `any` (getEnveloped's functions, onExecute's
    // args, a plugin's execution parameters) and the configuration's settings of every kind: typed at the use.
    files: [
      'src/config/docs.ts',
      'src/config/read.ts',
      'src/graphql/use-compiled-execution.ts',
      'src/graphql/subscription-root-rule.ts',
      'src/observability/metrics.ts',
      'src/subscriptions/graphql-ws.ts',
      'src/subscriptions/sse-event-ids.ts',
    ],
    rules: {
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
  {
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: {
      // Tests and benchmarks read answers as a client does: untyped JSON, looked into where the assertion needs it.
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      // `String(data)` of a WebSocket message or a thrown value is what a test prints or matches.
      '@typescript-eslint/no-base-to-string': 'off',
    },
  },
  layering,
  prettier,
);
