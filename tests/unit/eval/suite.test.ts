import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadSuite } from '../../../src/eval/suite.js';
import { ROOT } from '../../helpers/repo.js';

describe('loadSuite', () => {
  it('loads the bundled suite: three kinds, the seed tasks, scripts resolved', async () => {
    const s = await loadSuite(join(ROOT, 'examples', 'eval'));
    expect(s.name).toBe('kiln-bundled');
    expect(new Set(s.tasks.map((t) => t.kind))).toEqual(new Set(['bugfix', 'feature', 'refactor']));
    const fix = s.tasks.find((t) => t.name === 'fix-null-session')!;
    expect(fix.expectedFiles).toEqual(['src/auth/session.js']);
    expect(fix.script).toBe(join(ROOT, 'examples', 'eval', 'fix-null-session', 'script.json'));
    expect(fix.budgets).toMatchObject({ maxTurns: 12, maxUsd: 2 });
    const cancel = s.tasks.find((t) => t.name === 'add-order-cancel-api')!;
    expect(cancel.expectedFiles).toEqual(['src/modules/order/controller.js', 'src/modules/order/service.js']);
    // the real library: its license and its own tests ship with it; setup installs, checks run offline
    const lib = s.tasks.find((t) => t.name === 'fix-inflection-acronyms')!;
    expect(readFileSync(join(lib.repoDir, 'LICENSE'), 'utf8')).toContain('Copyright (C) 2012-2020 Janne Vanhala');
    expect(readFileSync(join(lib.repoDir, 'test_inflection.py'), 'utf8')).toContain('def test_underscore(');
    expect(lib.tests).toEqual(['test_inflection.py']);
    expect(lib.setup.some((c) => /pip install .*-e \./.test(c))).toBe(true);
    expect(lib.checks).toEqual(['.venv/bin/python -m pytest -q -p no:cacheprovider test_inflection.py']);
  });

  it('loads the failures suite, whose tasks share one fixture and say how they must fail', async () => {
    const s = await loadSuite(join(ROOT, 'examples', 'eval-failures'));
    const classes = new Set(s.tasks.map((t) => t.expect.failureClass).filter(Boolean));
    expect(classes).toEqual(new Set(['model', 'tool', 'policy', 'verifier', 'infrastructure']));
    expect(new Set(s.tasks.map((t) => t.repoDir))).toEqual(new Set([join(ROOT, 'examples', 'eval-failures', 'fixtures', 'discount')]));
  });

  it('picks tasks by name and refuses unknown ones', async () => {
    const dir = join(ROOT, 'examples', 'eval');
    expect((await loadSuite(dir, ['fix-null-session'])).tasks.map((t) => t.name)).toEqual(['fix-null-session']);
    await expect(loadSuite(dir, ['nope'])).rejects.toThrow(/--task nope: not in/);
  });

  it('names the file and field of a bad task.json, and a broken script, before anything runs', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kiln-suite-'));
    mkdirSync(join(dir, 't', 'repo'), { recursive: true });
    writeFileSync(join(dir, 't', 'task.json'), JSON.stringify({ name: 't', kind: 'bugfx', goal: 'x' }));
    await expect(loadSuite(dir)).rejects.toThrow(/t\/task.json: kind: /);
    writeFileSync(join(dir, 't', 'task.json'), JSON.stringify({ name: 't', kind: 'bugfix', goal: 'x', script: 's.json' }));
    writeFileSync(join(dir, 't', 's.json'), JSON.stringify({ steps: [{ tool_uses: [] }] }));
    await expect(loadSuite(dir)).rejects.toThrow(/s\.json/);
    await expect(loadSuite(join(dir, 'missing'))).rejects.toThrow(/no such directory/);
  });
});
