/**
 * verify: Kiln, not the model, decides "done". The repo's checks run in the sandbox; the diff
 * must stay in scope and leave protected files (tests by default) alone.
 */
import { Context } from '@temporalio/activity';
import { createHash } from 'node:crypto';
import { appendFile } from 'node:fs/promises';
import { join } from 'node:path';
import picomatch from 'picomatch';
import { runPolicy } from './run-policy.js';
import { sensitiveInPatch } from '../policy/patch-secrets.js';
import { redact } from '../redact/index.js';
import type { CheckOutcome, Verdict } from '../shared/types.js';
import type { VerifyInput } from './contracts.js';
import type { ActivityDeps } from './deps.js';
import { failingTests } from '../checks/failing-tests.js';
import { heartbeating } from './heartbeat.js';
import { loadRun, runDir, stateDir, writeWorkflowEvents, appendEvent } from './run-files.js';
import { changedFiles } from './workspace.js';

/** Per-check output tail kept in the verdict (history); the whole output is in tests.log. */
const CHECK_TAIL_CHARS = 1500;

export function verifyActivities(deps: ActivityDeps) {
  async function verify(inp: VerifyInput): Promise<Verdict> {
    await writeWorkflowEvents(inp.repo, inp.runId, inp.events);
    const rec = await loadRun(inp.repo, inp.runId);
    const log = join(runDir(inp.repo, inp.runId), 'tests.log');
    await appendFile(log, `\n===== attempt ${inp.attempt} · ${new Date().toISOString()} =====\n`);
    deps.crash('verify');

    const checks: CheckOutcome[] = [];
    let sandboxProblem: string | undefined;
    if (rec.checks.length) {
      try {
        const sandbox = await deps.sandbox(rec.input.sandbox);
        for (const command of rec.checks) {
          const res = await heartbeating(() =>
            sandbox.run(command, { workspace: rec.worktree, timeoutMs: rec.input.commandTimeoutMs, readOnlyPaths: rec.linked, signal: Context.current().cancellationSignal }),
          );
          const out = redact(res.output);
          await appendFile(log, `$ ${command}\n${out}\n[exit ${res.exitCode ?? res.signal}${res.timedOut ? ', timed out' : ''}]\n`);
          const passed = res.exitCode === 0 && !res.timedOut;
          checks.push({
            command,
            exitCode: res.exitCode,
            timedOut: res.timedOut,
            passed,
            failingTests: passed ? [] : failingTests(out),
            tail: out.slice(-CHECK_TAIL_CHARS),
          });
        }
      } catch (err) {
        sandboxProblem = `checks could not run: ${(err as Error).message}`;
        await appendFile(log, `${sandboxProblem}\n`);
      }
    }

    const { config } = await runPolicy(rec, deps.env);
    const changed = await changedFiles(rec.worktree, rec.baseCommit, stateDir(inp.repo, inp.runId));
    const allowed = picomatch(config.writeAllow, { dot: true });
    const isProtected = picomatch(config.protected, { dot: true });
    const outOfScope = changed.filter((f) => !allowed(f));
    const protectedChanged = rec.input.allowTestEdits ? [] : changed.filter((f) => isProtected(f));

    const problems: string[] = [];
    if (sandboxProblem) problems.push(sandboxProblem);
    for (const c of checks.filter((c) => !c.passed)) {
      problems.push(`check failed: ${c.command} (${c.timedOut ? 'timed out' : `exit ${c.exitCode}`})${c.failingTests.length ? `; failing: ${c.failingTests.slice(0, 5).join(', ')}` : ''}`);
    }
    if (outOfScope.length) problems.push(`changed files outside the allowed globs: ${outOfScope.join(', ')}`);
    if (protectedChanged.length) problems.push(`protected files changed: ${protectedChanged.join(', ')}`);
    problems.push(...(await sensitiveInPatch(rec.worktree, changed, config)));
    if (!inp.gateSatisfied) problems.push('the checks were not run after the last edit');
    if (!changed.length) problems.push('no files changed');

    const pass = problems.length === 0;
    const signature = createHash('sha256')
      .update(JSON.stringify([checks.filter((c) => !c.passed).map((c) => [c.command, [...c.failingTests].sort()]), outOfScope, protectedChanged, !changed.length]))
      .digest('hex')
      .slice(0, 16);
    const summary = pass
      ? `all ${checks.length} check(s) passed; ${changed.length} file(s) changed: ${changed.join(', ')}`
      : problems.join('\n');
    const verdict: Verdict = { pass, checks, outOfScope, protectedChanged, changedFiles: changed, signature, summary };
    await appendEvent(inp.repo, inp.runId, { type: 'verdict', attempt: inp.attempt, pass, summary, signature });
    return verdict;
  }

  return { verify };
}
