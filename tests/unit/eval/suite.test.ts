import { mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
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
    // the real library comes from its PyPI sdist at eval time, pinned; the task keeps only its own files
    const lib = s.tasks.find((t) => t.name === 'fix-inflection-acronyms')!;
    expect(lib.source).toEqual({ kind: 'pypi', spec: 'inflection==0.5.1', integrity: expect.stringMatching(/^sha256:[0-9a-f]{64}$/) });
    expect(readdirSync(lib.repoDir!)).toEqual(['.gitignore']);
    expect(lib.mutations).toEqual([{ file: 'inflection/__init__.py', find: expect.stringContaining('([A-Z]+)([A-Z][a-z])'), replace: expect.any(String) }]);
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

  it('loads the real-library suite: every task fetched from a registry, pinned, with one planted bug', async () => {
    const s = await loadSuite(join(ROOT, 'examples', 'eval-real'));
    expect(new Set(s.tasks.map((t) => t.source!.kind))).toEqual(new Set(['npm', 'pypi', 'go', 'crate']));
    for (const t of s.tasks) {
      expect(t.mutations, t.name).toHaveLength(1);
      expect(t.expectedFiles, t.name).toEqual([t.mutations![0]!.file]);
      expect(t.expect, t.name).toEqual({ outcome: 'succeeded', attempts: 1 });
    }
  });

  it('refuses a source that names no registry, two, a range, or a weak hash; a task with a source needs no repo folder', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kiln-suite-'));
    mkdirSync(join(dir, 't'));
    const write = (source: unknown) => writeFileSync(join(dir, 't', 'task.json'), JSON.stringify({ name: 't', kind: 'bugfix', goal: 'x', source }));
    const pin = 'sha512-zRpUiDwd/xk6ADqPMATG8vc9VPrkck7T07OIx0gnjmJAnHnTVXNQG3vfvWNuiZIkwu9KrKdA1iJKfsfTVxE6NA==';
    write({ integrity: pin });
    await expect(loadSuite(dir)).rejects.toThrow(/t\/task.json: source: name exactly one of npm, pypi, go, crate/);
    write({ npm: 'a@1.0.0', pypi: 'a==1.0.0', integrity: pin });
    await expect(loadSuite(dir)).rejects.toThrow(/name exactly one/);
    write({ npm: 'a@^1.0.0', integrity: pin });
    await expect(loadSuite(dir)).rejects.toThrow(/source\.npm: expected name@version/);
    write({ npm: 'a@1.0.0', integrity: 'sha1-abc=' });
    await expect(loadSuite(dir)).rejects.toThrow(/source\.integrity: expected sha512/);
    write({ npm: 'a@1.0.0', integrity: pin });
    const t = (await loadSuite(dir)).tasks[0]!;
    expect(t).toMatchObject({ source: { kind: 'npm', spec: 'a@1.0.0', integrity: pin }, mutations: [] });
    expect(t.repoDir).toBeUndefined();
    // without a source, the repo folder is the fixture and must be there
    writeFileSync(join(dir, 't', 'task.json'), JSON.stringify({ name: 't', kind: 'bugfix', goal: 'x' }));
    await expect(loadSuite(dir)).rejects.toThrow(/repo repo: no such folder/);
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

  it('loads the attempts suite: attempt transcripts, hidden checks by class and their folder, outside the fixture', async () => {
    const dir = join(ROOT, 'examples', 'eval-attempts');
    const s = await loadSuite(dir);
    const rescue = s.tasks.find((t) => t.name === 'parallel-rescues')!;
    expect(rescue.attemptScripts).toEqual([join(dir, 'parallel-rescues', 'wrong.json'), join(dir, 'parallel-rescues', 'right.json')]);
    expect(rescue.expect).toMatchObject({ outcome: 'blocked' });
    expect(rescue.expectAttempts).toMatchObject({ outcome: 'succeeded', honest: true });
    expect(new Set(s.tasks.flatMap((t) => t.hiddenChecks!.map((c) => c.class)))).toEqual(new Set(['special_case', 'test_detection', 'removed_behaviour']));
    expect(new Set(s.tasks.map((t) => t.hiddenDir))).toEqual(new Set([join(dir, 'fixtures', 'hidden')]));
  });

  it('refuses a hidden check of an unknown class, a hidden folder that is missing or inside the fixture, and a broken attempt transcript', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kiln-suite-'));
    mkdirSync(join(dir, 't', 'repo', 'hidden'), { recursive: true });
    const task = (o: object) => writeFileSync(join(dir, 't', 'task.json'), JSON.stringify({ name: 't', kind: 'bugfix', goal: 'x', ...o }));
    task({ hidden_checks: [{ run: 'node h.js', class: 'cheating' }] });
    await expect(loadSuite(dir)).rejects.toThrow(/t\/task.json: hidden_checks\[0\]\.class: expected one of "special_case"/);
    task({ hidden: 'nowhere' });
    await expect(loadSuite(dir)).rejects.toThrow(/hidden nowhere: no such folder/);
    task({ hidden: 'repo/hidden' });
    await expect(loadSuite(dir)).rejects.toThrow(/inside the fixture repo, so the run would see it/);
    writeFileSync(join(dir, 't', 'a.json'), JSON.stringify({ steps: [{ tool_uses: [] }] }));
    task({ attempt_scripts: ['a.json'] });
    await expect(loadSuite(dir)).rejects.toThrow(/a\.json/);
  });
});
