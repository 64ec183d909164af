/**
 * The scripted task the turn benchmark runs: a small git repository and a script of N turns,
 * each making cheap real tool calls (read_file, search), with an edit of a scratch file and
 * a read-only command every EDIT_EVERY turns, then the checks and finish on the last turn.
 * Every step after the first expects the previous turn's tool results to hold no error, so a
 * call that policy denied or that failed stops the benchmark instead of flattering it.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

export const EDIT_EVERY = 10;
/** the repository's checks: real tests, fast enough to run at the end of every benchmark run */
export const CHECK_COMMAND = 'node --test test/';
/** allowed without approval (`kiln policy check`: command.readonly) */
const CHEAP_COMMANDS = ['ls src', 'node --version'];
const SCRATCH = 'scratch/notes.md';
const END_MARK = '<!-- end -->';

const GIT_ENV = {
  ...process.env,
  GIT_AUTHOR_NAME: 'bench',
  GIT_AUTHOR_EMAIL: 'bench@example.com',
  GIT_COMMITTER_NAME: 'bench',
  GIT_COMMITTER_EMAIL: 'bench@example.com',
};

function moduleSource(i: number): string {
  const lines = [`// module ${i}: one of the files the benchmark reads`, `export function mod${i}(input) {`];
  for (let k = 0; k < 30; k++) lines.push(`  const step${k} = handleRequest('mod${i}', input + ${k}); // keeps the file a realistic size`);
  lines.push(`  return step0;`, `}`, '', `function handleRequest(name, value) {`, `  return { name, value };`, `}`, '');
  return lines.join('\n');
}

/** A git repository with `modules` source files, a passing test and a scratch file to edit. */
export function makeTaskRepo(dir: string, modules: number): string {
  const files: Record<string, string> = {
    'package.json': JSON.stringify({ name: 'kiln-bench-task', private: true, type: 'module', scripts: { test: CHECK_COMMAND } }, null, 2) + '\n',
    'AGENTS.md': `# Bench task\n\nChecks: \`${CHECK_COMMAND}\`\n`,
    'test/mod.test.js':
      "import { test } from 'node:test';\nimport assert from 'node:assert';\nimport { mod1 } from '../src/mod1.js';\n\ntest('mod1', () => assert.deepStrictEqual(mod1(1), { name: 'mod1', value: 1 }));\n",
    [SCRATCH]: `# Scratch notes\n\n${END_MARK}\n`,
  };
  for (let i = 1; i <= modules; i++) files[`src/mod${i}.js`] = moduleSource(i);
  for (const [rel, content] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, rel)), { recursive: true });
    writeFileSync(join(dir, rel), content);
  }
  const git = (...args: string[]) => execFileSync('git', args, { cwd: dir, env: GIT_ENV, stdio: 'ignore' });
  git('init', '-q', '-b', 'main');
  git('add', '-A');
  git('commit', '-q', '-m', 'bench task');
  return dir;
}

type ToolUse = { name: string; input: Record<string, unknown> };
type Step = { text?: string; tool_use: ToolUse[]; expect?: { tool_result_is_error: false }; repeat?: number };

const readAndSearch = (): ToolUse[] => [
  { name: 'read_file', input: { path: 'src/mod{{turn}}.js' } },
  { name: 'search', input: { pattern: 'export function mod{{turn}}(' } },
];

export function isEditTurn(turn: number, turns: number): boolean {
  return turn % EDIT_EVERY === 0 || turn === turns - 1;
}

/** Consecutive plain turns share one step with `repeat`; edit turns and the last turn stand alone. */
export function taskScript(turns: number): { name: string; steps: Step[] } {
  if (turns < 2) throw new Error('the scripted task needs at least 2 turns');
  const steps: Step[] = [{ text: 'Turn {{turn}}: reading.', tool_use: readAndSearch() }];
  let edits = 0;
  for (let t = 2; t < turns; t++) {
    if (isEditTurn(t, turns)) {
      const command = CHEAP_COMMANDS[edits++ % CHEAP_COMMANDS.length]!;
      steps.push({
        expect: { tool_result_is_error: false },
        text: 'Turn {{turn}}: reading, noting, looking around.',
        tool_use: [
          ...readAndSearch(),
          { name: 'edit', input: { path: SCRATCH, old_string: END_MARK, new_string: `turn {{turn}}\n${END_MARK}` } },
          { name: 'run_command', input: { command, reason: 'a cheap read-only command for the benchmark' } },
        ],
      });
      continue;
    }
    const last = steps[steps.length - 1]!;
    if (last.repeat !== undefined) last.repeat++;
    else steps.push({ expect: { tool_result_is_error: false }, text: 'Turn {{turn}}: reading.', tool_use: readAndSearch(), repeat: 1 });
  }
  steps.push({
    expect: { tool_result_is_error: false },
    text: 'Running the checks, then done.',
    tool_use: [
      { name: 'run_command', input: { command: CHECK_COMMAND, reason: 'the repository checks' } },
      { name: 'finish', input: { summary: `Benchmark: ${turns} scripted turns; checks run.` } },
    ],
  });
  return { name: `bench ${turns} turns`, steps };
}

export function writeTaskScript(file: string, turns: number): string {
  writeFileSync(file, JSON.stringify(taskScript(turns), null, 2));
  return file;
}
