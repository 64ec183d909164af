// ESLint for Kiln: the rules Temporal's TypeScript samples hold workflow code to, with type
// information so a forgotten `await` is found wherever it is.
import { builtinModules } from 'node:module';
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { layersPlugin } from './lint/layers.js';

// Workflow code is replayed and must be deterministic: Temporal's bundler refuses Node built-ins
// at bundle time; the lint says so at the line, with why. Side-effect modules of our own (the
// activities, the sandbox, policy, model, tools) may be imported as types only.
const NODE_BUILTINS = [...builtinModules, ...builtinModules.map((m) => `node:${m}`)];
const HOST_MODULES = ['activities', 'sandbox', 'policy', 'model', 'tools', 'context', 'checks', 'redact', 'client', 'cli', 'eval'];

// The layers of src/, lowest first. A folder imports its own files and what its row names, nothing
// else of src/: an arrow back up the table fails lint at the import. An entry is a folder, a
// folder inside one ('tools/x') or one file ('tools/catalog'); '*' is every folder but those in
// `but`. `types`: folders it may import types from only (erased when built). `except`: named
// files' arrows that are known to be wrong and are being taken out; each goes when its arrow does.
const LAYERS = [
  { folder: 'shared', mayImport: [] },
  // the turn loop: pure, read by workflow code and activities alike
  { folder: 'loop', mayImport: ['shared', 'tools/catalog'] },
  // settings.ts reads the environment once for all host code below; never workflow code
  { folder: 'redact', mayImport: ['shared', 'settings'] },
  { folder: 'codec', mayImport: ['shared', 'settings'] },
  { folder: 'process', mayImport: ['shared', 'settings'] },
  { folder: 'git', mayImport: ['shared', 'settings', 'process'] },
  { folder: 'model', mayImport: ['shared', 'settings'] },
  { folder: 'shell', mayImport: ['shared'] },
  { folder: 'checks', mayImport: ['shared', 'settings', 'shell'] },
  // the two-person rule checks the tool names a policy gives, from the pure catalog
  { folder: 'policy', mayImport: ['shared', 'settings', 'shell', 'checks', 'tools/catalog'] },
  { folder: 'auth', mayImport: ['shared', 'settings', 'policy'] },
  { folder: 'tools', mayImport: ['shared', 'settings', 'process', 'git', 'redact', 'policy'] },
  { folder: 'context', mayImport: ['shared', 'settings', 'process', 'git', 'tools'] },
  { folder: 'sandbox', mayImport: ['shared', 'settings', 'process', 'redact', 'policy'] },
  // the run's record on disk, which the activities write and the client reads
  { folder: 'store', mayImport: ['shared', 'settings', 'git', 'redact', 'policy'] },
  // replayed code: the tool catalog (names and flags) and the pure turn loop are the host code it runs
  { folder: 'workflows', mayImport: ['shared', 'loop', 'tools/catalog'], types: ['activities'] },
  {
    folder: 'activities',
    mayImport: [
      'shared',
      'settings',
      'testing-hooks',
      'loop',
      'redact',
      'process',
      'git',
      'model',
      'checks',
      'policy',
      'auth',
      'tools',
      'context',
      'sandbox',
      'store',
    ],
  },
  { folder: 'temporal', mayImport: ['shared', 'settings', 'codec', 'process', 'workflows'] },
  { folder: 'client', mayImport: ['shared', 'settings', 'codec', 'git', 'model', 'policy', 'auth', 'sandbox', 'store', 'workflows', 'temporal'] },
  // worker.ts, embedded.ts, settings.ts, testing-hooks.ts: the worker and the in-process server, put together from the layers
  { folder: '.', mayImport: ['*'], but: ['server', 'eval', 'cli'] },
  { folder: 'server', mayImport: ['shared', 'settings', 'model', 'policy', 'auth', 'workflows', 'temporal', 'client'] },
  { folder: 'eval', mayImport: ['shared', 'settings', 'git', 'model', 'checks', 'policy', 'context', 'tools/catalog', 'activities', 'client', '.'] },
  { folder: 'cli', mayImport: ['*'] },
];

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', 'examples/**', 'tests/replay/histories/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      parserOptions: {
        projectService: {
          allowDefaultProject: ['*.js', 'vitest.config.ts', 'bin/*.js', 'scripts/*.mjs', 'web/*.js', 'lint/*.js', 'tests/fixtures/*/*.mjs'],
          // the files outside tsconfig.json those globs match (9 now; the default bound is 8)
          maximumDefaultProjectFileMatchCount_THIS_WILL_SLOW_DOWN_LINTING: 12,
        },
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
    // a function past a screenful holds several things that want names of their own; tests are exempt
    files: ['src/**/*.ts', 'bench/**/*.ts'],
    rules: { 'max-lines-per-function': ['error', { max: 120, skipBlankLines: true, skipComments: true }] },
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
    files: ['src/**/*.ts'],
    plugins: { kiln: layersPlugin },
    rules: { 'kiln/layers': ['error', { src: `${import.meta.dirname}/src`, layers: LAYERS }] },
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
