import tseslint from 'typescript-eslint';
import importPlugin from 'eslint-plugin-import';

const NODE_BUILTINS = ['assert', 'buffer', 'child_process', 'cluster', 'crypto', 'dgram', 'dns', 'events', 'fs', 'http', 'http2', 'https', 'net', 'os', 'path', 'perf_hooks', 'process', 'stream', 'timers', 'tls', 'url', 'util', 'worker_threads', 'zlib'];

export default tseslint.config(
  { ignores: ['lib/**', 'node_modules/**', 'coverage/**', 'bench/results/**'] },
  ...tseslint.configs.recommended,
  {
    files: ['src/**/*.ts', 'test/**/*.ts'],
    languageOptions: { parserOptions: { project: './tsconfig.json', tsconfigRootDir: import.meta.dirname } },
    plugins: { import: importPlugin },
    settings: { 'import/resolver': { node: { extensions: ['.ts', '.js'] } } },
    rules: {
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' }],
      'import/no-cycle': 'error',
    },
  },
  {
    // a function a reader understands without scrolling (CONTRIBUTING.md, "Keeping the house readable")
    files: ['src/**/*.ts'],
    rules: { 'max-lines-per-function': ['error', { max: 120 }] },
  },
  {
    // workflow code must stay deterministic: no Node builtins, no transports, activities as types only
    // the pure folders: what workflows may import, the contract among them. Everything with I/O lives elsewhere (validation/, activities/, transports/, …)
    // the direction between these folders (contract above the pure domain, activities via the contract only) is .dependency-cruiser.cjs's
    files: ['src/{workflows,contract,policy,classify,delivery,subscription,endpoints}/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        paths: NODE_BUILTINS.flatMap((m) => [m, `node:${m}`]).map((name) => ({ name, message: 'workflow code is deterministic: no Node builtins' })),
        patterns: [
          { group: ['**/transports', '**/transports/**', '**/client', '**/worker', '**/cli/**', '**/validation/**', '**/plot/**', 'undici', 'mqtt', 'zod'], message: 'workflow code may not reach I/O' },
          { group: ['**/activities', '**/activities/**'], allowTypeImports: true, message: 'import activities as types only' },
        ],
      }],
      'no-restricted-globals': ['error', { name: 'setTimeout', message: 'use sleep() from @temporalio/workflow' }, { name: 'setInterval', message: 'use sleep() from @temporalio/workflow' }],
    },
  },
);
