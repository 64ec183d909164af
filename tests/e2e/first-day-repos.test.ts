/**
 * A new user's own repo on the first day: a Python project with no .gitignore whose tests leave
 * bytecode, caches and coverage behind; the check line typed as one `&&` command; and a checkout
 * with work not yet committed. Real `kiln dev`, worktree, sandbox, policy and verifier; only the
 * model is scripted.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/temporal/dev-server.js';
import { git, repoWith, writeScript } from '../helpers/repo.js';
import { kiln, lastLine, spawnKiln, userEnv, type Live } from './cli.js';

let dev: Live;
let env: NodeJS.ProcessEnv;
let scripts: string;

beforeAll(async () => {
  const port = await freePort();
  const home = mkdtempSync(join(tmpdir(), 'kiln-e2e-repos-'));
  scripts = mkdtempSync(join(tmpdir(), 'kiln-e2e-scripts-'));
  env = userEnv({ KILN_HOME: home });
  dev = spawnKiln(['dev', '--port', String(port), '--ui-port', String(await freePort()), '--db', join(home, 'temporal.db')], { env });
  await dev.waitFor('Ctrl-C stops everything', 90_000);
  env = { ...env, TEMPORAL_ADDRESS: `127.0.0.1:${port}` };
}, 120_000);

afterAll(async () => {
  await dev?.kill();
});

/** A unittest project without a .gitignore; its test leaves the clutter real tools leave. */
const PYTHON_REPO = {
  'calc.py': 'def add(a, b):\n    return a - b\n',
  'tests/__init__.py': '',
  'tests/test_calc.py': [
    'import os, py_compile, unittest',
    'import calc',
    '',
    'class CalcTest(unittest.TestCase):',
    '    def test_add(self):',
    '        # what pytest, coverage and an import leave behind, written whatever the environment says',
    "        py_compile.compile('tests/test_calc.py', doraise=True)",
    "        os.makedirs('htmlcov', exist_ok=True); open('htmlcov/index.html', 'w').write('<html>')",
    "        os.makedirs('.pytest_cache/v/cache', exist_ok=True); open('.pytest_cache/v/cache/lastfailed', 'w').write('{}')",
    "        open('.coverage', 'w').write('coverage data')",
    '        self.assertEqual(calc.add(2, 3), 5)',
    '',
  ].join('\n'),
  'tools/style.py': "import sys\nsys.exit(1 if '\\t' in open('calc.py').read() else print('style: clean'))\n",
};
const CHECKS = ['python3 -m unittest -v', 'python3 tools/style.py'];
const SUMMARY = 'add() adds instead of subtracting; unittest and the style check pass.';

function pythonScript(name: string, from: string): string {
  return writeScript(scripts, name, {
    steps: [
      { tool_use: [{ name: 'run_command', input: { command: 'python3 -m unittest -v', reason: 'reproduce the failure' } }] },
      {
        expect: { tool_result_contains: 'FAIL: test_add' },
        tool_use: [{ name: 'edit', input: { path: 'calc.py', old_string: from, new_string: 'return a + b' } }],
      },
      // the check line as printed, run as one command: the stop gate must count both checks
      {
        expect: { tool_result_is_error: false },
        tool_use: [{ name: 'run_command', input: { command: CHECKS.join(' && '), reason: 'the checks after the edit' } }],
      },
      { expect: { tool_result_contains: 'style: clean' }, tool_use: [{ name: 'finish', input: { summary: SUMMARY } }] },
    ],
  });
}

const runArgs = (repo: string, id: string, script: string, ...more: string[]) => [
  'run',
  '--repo',
  repo,
  '--goal',
  'add() must add',
  '--model',
  `scripted:${script}`,
  '--id',
  id,
  ...CHECKS.flatMap((c) => ['--check', c]),
  ...more,
];

describe('a Python repo without a .gitignore', () => {
  it('runs to succeeded; the patch holds calc.py only, no bytecode, cache or coverage; the && check line satisfies the stop gate', async () => {
    const repo = repoWith(PYTHON_REPO, 'kiln-e2e-py-');
    const id = `py-${process.pid}`;
    const r = await kiln([...runArgs(repo, id, pythonScript('py', 'return a - b')), '--output-format', 'json'], { env, timeoutMs: 180_000 });
    const out = JSON.parse(lastLine(r.stdout)) as { state: string; artifactsDir: string; verdict?: { changedFiles: string[] } };
    expect(out.state, r.stderr).toBe('succeeded');
    expect(r.code).toBe(0);
    expect(r.stderr).not.toMatch(/stop gate: finish refused/);
    // the live view shows each command with its outcome (one still running after 1.5 s is shown
    // as running: tests/workflow/run-ahead.test.ts), and the model's own summary at finish
    expect(r.stderr).toMatch(/↳ run_command: python3 -m unittest -v → exit code 1/);
    expect(r.stderr).toContain(`↳ finish: ${SUMMARY}`);
    const patch = readFileSync(join(out.artifactsDir, 'patch.diff'), 'utf8');
    expect(patch.match(/^diff --git .*$/gm)).toEqual(['diff --git a/calc.py b/calc.py']);
    expect(patch).toContain('+    return a + b');
    expect(patch).not.toMatch(/__pycache__|\.pyc|pytest_cache|htmlcov|\.coverage|GIT binary patch/);
    // the patch applies to the user's checkout as it is
    git(repo, 'apply', '--check', join(out.artifactsDir, 'patch.diff'));
  }, 240_000);
});

describe('uncommitted work in the checkout', () => {
  it('is named at start when left out; --include-uncommitted starts from it and the patch is against it', async () => {
    const repo = repoWith(PYTHON_REPO, 'kiln-e2e-dirty-');
    // the user had started: calc.py edited (not committed), a new note not yet added
    writeFileSync(join(repo, 'calc.py'), 'def add(a, b):\n    # started by hand\n    return a - b\n');
    writeFileSync(join(repo, 'NOTES.md'), 'work in progress\n');

    const left = await kiln([...runArgs(repo, `dirty-a-${process.pid}`, pythonScript('dirty-a', 'return a - b')), '--detach'], { env });
    expect(left.code, left.stderr).toBe(0);
    expect(left.stderr).toContain('warning: 2 uncommitted changes in');
    expect(left.stderr).toContain('(modified: calc.py; untracked: NOTES.md); it starts from the last commit. Commit them, or pass --include-uncommitted');
    await kiln(['cancel', `dirty-a-${process.pid}`], { env });

    const id = `dirty-b-${process.pid}`;
    const r = await kiln([...runArgs(repo, id, pythonScript('dirty-b', 'return a - b'), '--include-uncommitted'), '--output-format', 'json'], {
      env,
      timeoutMs: 180_000,
    });
    expect(r.stdout, r.stderr).toMatch(/"state"/);
    const out = JSON.parse(lastLine(r.stdout)) as { state: string; artifactsDir: string };
    expect(out.state, r.stderr).toBe('succeeded');
    expect(r.stderr).toMatch(
      new RegExp(`including 2 uncommitted changes: the run starts from [0-9a-f]{10} \\(HEAD plus the working tree, kept as refs/kiln/bases/${id}\\)`),
    );
    expect(r.stderr).not.toContain('warning: 2 uncommitted');
    const patch = readFileSync(join(out.artifactsDir, 'patch.diff'), 'utf8');
    // only the run's own change: the user's comment and note are in the base, not in the patch
    expect(patch.match(/^diff --git .*$/gm)).toEqual(['diff --git a/calc.py b/calc.py']);
    expect(patch).toContain('     # started by hand\n-    return a - b\n+    return a + b');
    expect(patch).not.toContain('+    # started by hand');
    // it applies on top of the user's working tree, which Kiln left as it was
    git(repo, 'apply', '--check', join(out.artifactsDir, 'patch.diff'));
    expect(git(repo, 'status', '--porcelain', '--', '.', ':(exclude).kiln')).toBe(' M calc.py\n?? NOTES.md\n');
    expect(git(repo, 'show', `refs/kiln/bases/${id}:NOTES.md`)).toBe('work in progress\n');
  }, 300_000);
});
