/**
 * False rejects, measured: `kiln eval --suite examples/eval-real` through the built CLI. Each task
 * is a real library fetched from its registry (npm, PyPI, the Go module proxy, crates.io), a bug
 * planted by one mutation, and a scripted coder whose edit is that mutation's inverse — an honest
 * fix. Every one must end `succeeded` in one attempt; a verdict that refuses one is the verifier's
 * fault. Needs a fresh build and the registries (setup installs test tools with network; the checks
 * run offline in the sandbox). Two runs at a time: 5 to 6 minutes on 2 cores, fetches included.
 */
import { execa } from 'execa';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadSuite } from '../../src/eval/suite.js';
import type { EvalReport } from '../../src/eval/types.js';
import { ROOT } from '../helpers/repo.js';

const SUITE = join(ROOT, 'examples', 'eval-real');

describe('kiln eval on real libraries', () => {
  it(
    'ends every honest fix succeeded in one attempt, each with a real failing baseline',
    async () => {
      const home = mkdtempSync(join(tmpdir(), 'kiln-eval-real-'));
      const out = join(home, 'report');
      const res = await execa('node', [join(ROOT, 'bin', 'kiln.js'), 'eval', '--suite', SUITE, '--repeat', '1', '--json', '--out', out], {
        cwd: ROOT,
        reject: false,
        env: { KILN_HOME: home, ANTHROPIC_API_KEY: '', KILN_MODEL: '' },
        extendEnv: true,
      });
      const last = res.stdout.trim().split('\n').pop() ?? '';
      let report: EvalReport;
      try {
        report = JSON.parse(last) as EvalReport;
      } catch {
        throw new Error(
          `kiln eval (exit ${res.exitCode}) printed no JSON report last\nstdout:\n${res.stdout.slice(-3000)}\nstderr:\n${res.stderr.slice(-3000)}`,
        );
      }
      const tasks = (await loadSuite(SUITE)).tasks;
      expect(report.runs.map((r) => r.task).sort()).toEqual(tasks.map((t) => t.name).sort());

      // one line per refused task, naming the verifier's finding: the failure message is the bug report
      const refused = report.runs
        .filter((r) => !(r.outcome === 'succeeded' && r.attempts === 1))
        .map((r) => `${r.task}: ${r.outcome} after ${r.attempts} attempt(s): ${r.findings[0] ?? r.reason}`);
      expect(refused).toEqual([]);
      expect(res.exitCode).toBe(0);

      for (const r of report.runs) {
        const task = tasks.find((t) => t.name === r.task)!;
        expect(r, r.task).toMatchObject({ success: true, failureClass: null, testsModified: false, unexpectedFiles: [] });
        expect(r.changedFiles, r.task).toEqual([task.mutations![0]!.file]);
        // the planted bug was real: the base failed its own tests before the fix
        const log = readFileSync(join(r.artifacts!, 'tests.log'), 'utf8');
        expect(log, r.task).toMatch(/end of baseline: .*: \d+ passed, [1-9]\d* failed/);
        expect(log, r.task).toMatch(/\[verdict: pass/);
      }
    },
    30 * 60_000,
  );
});
