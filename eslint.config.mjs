// ESLint flat config. Type-aware rules (typescript-eslint's project service reads tsconfig.json) for the
// TypeScript tree; the plain .mjs scripts get the syntax-only rules.
//
// Not here on purpose:
// - Import boundaries (who may import whom, client code kept off server modules) are enforced by
//   test/layering.test.ts with the rules in test/layering.ts; that test is the one rule, not an ESLint plugin.
// - Unused exports: ESLint cannot see across files; test/unused-exports.test.ts lists exported names no other
//   file imports.
// - Formatting: Prettier (`npm run format:check`).
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import reactHooks from 'eslint-plugin-react-hooks';
import tseslint from 'typescript-eslint';

const nodeGlobals = Object.fromEntries(
  [
    'process',
    'console',
    'Buffer',
    'URL',
    'URLSearchParams',
    'setTimeout',
    'clearTimeout',
    'setInterval',
    'clearInterval',
    'setImmediate',
    'queueMicrotask',
    'structuredClone',
    'fetch',
    'AbortController',
    'AbortSignal',
    'TextEncoder',
    'TextDecoder',
    'performance',
    'crypto',
  ].map((name) => [name, 'readonly']),
);

export default defineConfig(
  {
    // Generated and built code, never linted.
    ignores: [
      'node_modules/',
      'server/db/generated/',
      '.next/',
      'dist/',
      '.build/',
      '.cache/',
      '.data/',
      '.test-data/',
      'test-results/',
      'playwright-report/',
      'next-env.d.ts',
    ],
  },
  {
    linterOptions: { reportUnusedDisableDirectives: 'error' },
  },
  {
    files: ['**/*.mjs', '**/*.js'],
    extends: [js.configs.recommended],
    languageOptions: { globals: nodeGlobals },
    rules: {
      'no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
    },
  },
  {
    files: ['**/*.ts', '**/*.tsx', '**/*.mts'],
    // The syntax rules of `recommended`, plus the type-aware rules that catch real bugs here. Not the whole
    // `recommendedTypeChecked`: its no-unsafe-* family flags every `any` that pg, JSON.parse and test
    // doubles hand out (about 500 sites, most in tests), which typed rows address where they matter.
    extends: [js.configs.recommended, ...tseslint.configs.recommended],
    languageOptions: {
      parserOptions: {
        projectService: true,
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      // Promises: awaited, handled, or marked `void` with a reason where fire-and-forget is intended.
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      // A switch over a union (DomainErrorCode above all) names every member or says `default`.
      '@typescript-eslint/switch-exhaustiveness-check': [
        'error',
        { considerDefaultExhaustiveForUnions: true, requireDefaultForNonUnion: false },
      ],
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true },
      ],
      '@typescript-eslint/only-throw-error': 'error',
      // Rejecting control characters is what those patterns are for.
      'no-control-regex': 'off',
      // `let x = fallback; try { x = … } catch { x = fallback }` states the fallback twice on purpose.
      'no-useless-assignment': 'off',
      // A handler assigned after the closure that reads it is created (server/boot/http-server.ts).
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
    },
  },
  {
    // React code only: elsewhere a parameter named `use` is not a hook.
    files: ['app/**/*.{ts,tsx}', 'components/**/*.{ts,tsx}', 'lib/**/*.{ts,tsx}'],
    plugins: { 'react-hooks': reactHooks },
    rules: {
      'react-hooks/rules-of-hooks': 'error',
      'react-hooks/exhaustive-deps': 'error',
    },
  },
);
