/**
 * A check run under the tracer: strace follows the sandbox from outside, so the command runs as
 * it would untraced, and the log names the worktree files it read, looked for and executed — at
 * paths the command cannot reach to edit.
 */
import { mkdtempSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { readTrace, used } from '../../../src/checks/trace.js';
import { createSandbox } from '../../../src/sandbox/index.js';
import type { Sandbox } from '../../../src/sandbox/types.js';
import { findSystemBinary } from '../../../src/process/system-paths.js';

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await createSandbox({ mode: 'bwrap' });
});

describe.skipIf(!findSystemBinary('strace'))('a traced command', () => {
  it('runs as usual and its log names what it read, looked for and ran inside the worktree, and which process ran tests', async () => {
    const ws = mkdtempSync(join(tmpdir(), 'kiln-traced-'));
    writeFileSync(join(ws, 'lib.js'), 'exports.x = 41;\n');
    writeFileSync(join(ws, 'runner.conf'), 'jobs=1\n');
    writeFileSync(join(ws, 'test.js'), "const { x } = require('./lib');\ntry { require('./missing'); } catch {}\nconsole.log('x is', x + 1);\n");
    const log = join(mkdtempSync(join(tmpdir(), 'kiln-trace-log-')), 'trace.log');
    const res = await sandbox.run(`cat runner.conf >/dev/null && node test.js && echo done > out.txt`, { workspace: ws, timeoutMs: 30_000, traceFile: log });
    expect(res.output, res.output).toContain('x is 42');
    expect(res.exitCode).toBe(0);
    expect(res.traced).toBe(true);
    expect(existsSync(log)).toBe(true);
    const trace = await readTrace(log, ws, (p) => p === 'test.js');
    expect(used(trace, 'lib.js')).toBe(true);
    expect(used(trace, 'test.js')).toBe(true);
    expect(trace.inside.get('missing.js')?.has('probe')).toBe(true);
    expect(trace.inside.get('out.txt')?.has('write')).toBe(true);
    // what the test's process read is code under test; what only the wrappers around it read is the runner's
    expect([...trace.runnerOnly].sort()).toEqual(['out.txt', 'runner.conf']);
    expect(trace.programs.get('node')?.size).toBeGreaterThan(0);
    expect(readFileSync(log, 'utf8').length).toBeGreaterThan(0);
  });
});
