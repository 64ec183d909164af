/**
 * The preloads that keep the base's test runtime: code under test that replaces an assertion
 * function is reported (and, for node:assert, the replacement does not take); a repo file named
 * like the runner's module does not replace it. Real node and python3, no sandbox needed.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { integrityEnv, integrityFindings } from '../../../src/checks/integrity.js';

const hasPython = spawnSync('python3', ['--version']).status === 0;
/** each checkout's own files: what a test writes here besides them stands for what setup installed */
const own = new Map<string, string[]>();

async function run(cwd: string, cmd: string, args: string[]): Promise<{ code: number; out: string }> {
  const pre = mkdtempSync(join(tmpdir(), 'kiln-integrity-'));
  const env = await integrityEnv(pre, pre, { dir: cwd, files: own.get(cwd) ?? [] });
  const res = spawnSync(cmd, args, { cwd, env: { ...process.env, ...env }, encoding: 'utf8' });
  return { code: res.status ?? -1, out: `${res.stdout}${res.stderr}` };
}

function repo(files: Record<string, string>, installed: Record<string, string> = {}): string {
  const dir = mkdtempSync(join(tmpdir(), 'kiln-integrity-repo-'));
  for (const [name, text] of Object.entries({ ...files, ...installed })) {
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  own.set(dir, Object.keys(files));
  return dir;
}

describe('node: node:assert is the base runtime', () => {
  it('a module under test that turns strictEqual into a no-op is reported, and the assertion still fails', async () => {
    const dir = repo({
      'lib.js': "const assert = require('node:assert');\nassert.strictEqual = () => {};\nassert.deepStrictEqual = () => {};\nmodule.exports = (a) => a + 2;\n",
      'test.js':
        "const assert = require('node:assert');\nconst add = require('./lib');\nassert.strictEqual(add(1), 2);\nconsole.log('all 1 check(s) passed');\n",
    });
    const res = await run(dir, process.execPath, ['test.js']);
    expect(res.code).not.toBe(0);
    expect(res.out).not.toContain('all 1 check(s) passed');
    expect(integrityFindings(res.out)).toContain('node:assert.strictEqual was replaced at run time');
  });

  it('through a new helper the module requires (ESM and assert/strict alike)', async () => {
    const dir = repo({
      'compat.mjs': "import assert from 'node:assert/strict';\ntry { assert.equal = () => {}; } catch {}\nexport {};\n",
      'test.mjs': "import './compat.mjs';\nimport assert from 'node:assert/strict';\nassert.equal(1, 2);\nconsole.log('passed');\n",
    });
    const res = await run(dir, process.execPath, ['test.mjs']);
    expect(res.code).not.toBe(0);
    expect(integrityFindings(res.out).join('\n')).toMatch(/node:assert(\/strict)?\.equal was replaced/);
  });

  it('control: honest code and tests run as before, with nothing reported', async () => {
    const dir = repo({
      'lib.js': 'module.exports = (a) => a + 1;\n',
      'test.js':
        "const assert = require('node:assert');\nconst add = require('./lib');\nassert.strictEqual(add(1), 2);\nassert.throws(() => { throw new Error('x'); });\nconsole.log('ok');\n",
    });
    const res = await run(dir, process.execPath, ['test.js']);
    expect(res.code).toBe(0);
    expect(res.out).toContain('ok');
    expect(integrityFindings(res.out)).toEqual([]);
  });
});

describe.skipIf(!hasPython)('python: unittest and pytest are the base runtime', () => {
  it('a module under test that replaces TestCase.assertEqual is reported', async () => {
    const dir = repo({
      'calc.py': 'import unittest\nunittest.TestCase.assertEqual = lambda self, a, b, msg=None: None\ndef add(a, b):\n    return a - b\n',
      'test_calc.py': 'import unittest\nfrom calc import add\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(1, 2), 3)\n',
    });
    const res = await run(dir, 'python3', ['-m', 'unittest', '-v']);
    expect(integrityFindings(res.out)).toContain('unittest.case.TestCase.assertEqual was replaced at run time by code in the checkout');
  });

  it('a top-level unittest.py in the repo does not replace the standard library runner', async () => {
    const dir = repo({
      'unittest.py': "print('Ran 1 test in 0.000s')\nprint()\nprint('OK')\n",
      'calc.py': 'def add(a, b):\n    return a - b\n',
      'test_calc.py': 'import unittest\nfrom calc import add\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(1, 2), 3)\n',
    });
    const res = await run(dir, 'python3', ['-m', 'unittest']);
    expect(res.code).not.toBe(0);
    expect(res.out).toMatch(/FAILED \(failures=1\)/);
  });

  it('control: a runner installed into the checkout by setup (a virtualenv) is the toolchain, not tampering', async () => {
    const dir = repo(
      {
        'calc.py': 'def add(a, b):\n    return a + b\n',
        'test_calc.py':
          'import sys\nsys.path.insert(0, ".venv/lib")\nimport unittest\nimport pluggy\nfrom calc import add\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(1, 2), 3)\n',
      },
      { '.venv/lib/pluggy/__init__.py': 'def varnames(fn):\n    return ()\nclass HookspecMarker:\n    def __call__(self, f):\n        return f\n' },
    );
    const res = await run(dir, 'python3', ['-m', 'unittest']);
    expect(res.code, res.out).toBe(0);
    expect(integrityFindings(res.out)).toEqual([]);
  });

  it('control: an honest unittest run passes and reports nothing', async () => {
    const dir = repo({
      'calc.py': 'def add(a, b):\n    return a + b\n',
      'test_calc.py':
        'import unittest\nfrom calc import add\nclass T(unittest.TestCase):\n    maxDiff = None\n    def test_add(self):\n        self.assertEqual(add(1, 2), 3)\n',
    });
    const res = await run(dir, 'python3', ['-m', 'unittest']);
    expect(res.code).toBe(0);
    expect(integrityFindings(res.out)).toEqual([]);
  });
});
