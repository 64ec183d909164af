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
  { folder: 'redact', mayImport: ['shared'] },
  { folder: 'codec', mayImport: ['shared'] },
  { folder: 'process', mayImport: ['shared'] },
  { folder: 'git', mayImport: ['shared', 'process'] },
  { folder: 'model', mayImport: ['shared'] },
  { folder: 'shell', mayImport: ['shared'] },
  { folder: 'checks', mayImport: ['shared', 'shell'] },
  {
    folder: 'policy',
    mayImport: ['shared', 'shell', 'checks'],
    // policy and tools import each other (the tool judges, the tool names); being settled apart
    except: [{ files: ['policy/evaluate', 'policy/two-person-rule'], mayImport: ['tools'] }],
  },
  { folder: 'auth', mayImport: ['shared', 'policy'] },
  { folder: 'tools', mayImport: ['shared', 'process', 'git', 'redact', 'policy'] },
  { folder: 'context', mayImport: ['shared', 'process', 'git', 'tools'] },
  { folder: 'sandbox', mayImport: ['shared', 'process', 'redact', 'policy'] },
  // the run's record on disk, which the activities write and the client reads
  { folder: 'store', mayImport: ['shared', 'git', 'redact', 'policy'] },
  // replayed code: the tool catalog (names and flags) is the one host module it runs
  { folder: 'workflows', mayImport: ['shared', 'tools/catalog'], types: ['activities'] },
  {
    folder: 'activities',
    mayImport: ['shared', 'redact', 'process', 'git', 'model', 'checks', 'policy', 'auth', 'tools', 'context', 'sandbox', 'store'],
    // the turn's look ahead takes the attempt's checks from workflow code; being moved to shared
    except: [{ files: ['activities/run-ahead'], mayImport: ['workflows'] }],
  },
  { folder: 'temporal', mayImport: ['shared', 'codec', 'process', 'workflows'] },
  { folder: 'client', mayImport: ['shared', 'codec', 'git', 'model', 'policy', 'auth', 'sandbox', 'store', 'workflows', 'temporal'] },
  // worker.ts and embedded.ts: the worker and the in-process server, put together from the layers
  { folder: '.', mayImport: ['*'], but: ['server', 'eval', 'cli'] },
  { folder: 'server', mayImport: ['shared', 'model', 'policy', 'auth', 'workflows', 'temporal', 'client'] },
  { folder: 'eval', mayImport: ['shared', 'git', 'model', 'checks', 'policy', 'context', 'activities', 'client', '.'] },
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
          allowDefaultProject: ['*.js', 'vitest.config.ts', 'bin/*.js', 'scripts/*.mjs', 'web/*.js', 'lint/*.js'],
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
  {
    // tools own their judges and call the policy's parts; a policy that imported the tools back
    // would tie every judge to every tool again (the pure catalog's names are the one exception)
    files: ['src/policy/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['../tools/*', '../../tools/*', '!../tools/catalog.js', '!../../tools/catalog.js'],
              message: 'The policy imports nothing of the tools: a tool judges its calls (its file in src/tools) from the parts in src/policy/judging.ts.',
            },
          ],
        },
      ],
    },
  },
);
