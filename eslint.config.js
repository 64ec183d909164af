// ESLint for Kiln: the rules Temporal's TypeScript samples hold workflow code to, with type
// information so a forgotten `await` is found wherever it is.
import { builtinModules } from 'node:module';
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// Workflow code is replayed and must be deterministic: Temporal's bundler refuses Node built-ins
// at bundle time; the lint says so at the line, with why. Side-effect modules of our own (the
// activities, the sandbox, policy, model, tools) may be imported as types only.
const NODE_BUILTINS = [...builtinModules, ...builtinModules.map((m) => `node:${m}`)];
const HOST_MODULES = ['activities', 'sandbox', 'policy', 'model', 'tools', 'context', 'checks', 'redact', 'client', 'cli', 'eval'];

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', 'examples/**', 'tests/replay/histories/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      parserOptions: {
        projectService: { allowDefaultProject: ['*.js', 'vitest.config.ts', 'bin/*.js', 'scripts/*.mjs', 'web/*.js'] },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      // forgetting to await an activity, a workflow API or a file write is the bug this catches
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false, attributes: false } }],
      'object-shorthand': ['error', 'always'],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly', URL: 'readonly', Buffer: 'readonly' } },
  },
  {
    // the inbox runs in the browser
    files: ['web/*.js'],
    languageOptions: {
      sourceType: 'script',
      globals: {
        document: 'readonly',
        sessionStorage: 'readonly',
        fetch: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        AbortController: 'readonly',
        TextDecoderStream: 'readonly',
        CSS: 'readonly',
      },
    },
  },
  {
    // the turn loop is read by workflow code and activities alike: it imports neither side, nor Node
    files: ['src/loop/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: NODE_BUILTINS.map((name) => ({ name, message: 'The turn loop runs in workflow code too: no Node built-ins.' })),
          patterns: [
            {
              group: ['@temporalio/*', '../workflows/*', ...HOST_MODULES.map((m) => `../${m}/*`)],
              message: 'The turn loop is pure: the workflow and the activities import it, not the other way round.',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['src/workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: NODE_BUILTINS.map((name) => ({
            name,
            message: 'Workflow code is replayed: no Node built-ins (I/O, clock, randomness) — do it in an activity.',
          })),
          patterns: [
            {
              // the tool catalog is the one pure host module workflow code reads (names and flags)
              group: [...HOST_MODULES.map((m) => `../${m}/*`), '!../tools/catalog.js'],
              allowTypeImports: true,
              message: 'Workflow code imports host modules as types only; call them through proxyActivities.',
            },
          ],
        },
      ],
    },
  },
);
