// Type-aware linting: typescript-eslint's recommended type-checked rules over the server code (tsconfig.json)
// and the browser console (tsconfig.console.json), each file checked against the project that compiles it.
// No formatting rules: layout is not linted.
import js from '@eslint/js';
import { defineConfig, globalIgnores } from 'eslint/config';
import tseslint from 'typescript-eslint';

const root = import.meta.dirname;

export default defineConfig(
  globalIgnores(['dist/', 'test/clients/', 'coverage/', 'test-results/', 'data/']),
  {
    files: ['**/*.ts'],
    extends: [js.configs.recommended, tseslint.configs.recommendedTypeChecked],
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // A leading underscore marks a name left unused on purpose (a field taken out with a rest pattern, a parameter an interface requires), as for tsc's noUnused* checks.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      // The SQLite store and the in-process books implement async interfaces synchronously; `async` keeps their throws rejections, as callers of the interface expect.
      '@typescript-eslint/require-await': 'off',
      // Interfaces here declare functions in method syntax and none uses `this`, so passing them around unbound (row mappers, plugin setup, wire framing) is safe.
      '@typescript-eslint/unbound-method': 'off',
      // Optional backends (pg, ioredis, the tokenizer's encoding table) are required lazily from synchronous code, so a process that does not use them never loads them.
      '@typescript-eslint/no-require-imports': 'off',
      // Name and header checks match control characters on purpose, to refuse them.
      'no-control-regex': 'off',
      // prom-client calls a gauge's collect() with the gauge as `this`, so the metrics object is reached through an alias named `metrics`.
      '@typescript-eslint/no-this-alias': ['error', { allowedNames: ['metrics'] }],
      // Errors caught as `unknown` are passed on as they came, rejections included.
      '@typescript-eslint/prefer-promise-reject-errors': ['error', { allowThrowingUnknown: true }],
      // Interfaces that declaration merging fills in (PluginServices, from plugins/index.ts) start empty.
      '@typescript-eslint/no-empty-object-type': ['error', { allowInterfaces: 'always' }],
      // Event handlers and Node callbacks (onclick, http.createServer(app.callback())) take async functions that settle their own errors.
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false, attributes: false, properties: false } }],
    },
  },
  {
    files: ['src/**/*.ts', 'plugins/**/*.ts', 'test/**/*.ts', 'bench/**/*.ts'],
    languageOptions: { parserOptions: { project: './tsconfig.json', tsconfigRootDir: root } },
  },
  {
    files: ['console/src/**/*.ts'],
    languageOptions: { parserOptions: { project: './tsconfig.console.json', tsconfigRootDir: root } },
  },
  {
    files: ['test/**/*.ts'],
    rules: {
      // Tests read reply bodies as `any` (test/admin/api-client.ts) and let chai's assertions check their shape.
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      // chai's property assertions (`expect(x).to.be.empty`) are expressions by design.
      '@typescript-eslint/no-unused-expressions': 'off',
    },
  },
);
