/**
 * Each Kiln error says once whether a retry can help and which exit code the CLI ends with;
 * activities turn that into the ApplicationFailure Temporal retries on (or does not).
 */
import { ApplicationFailure } from '@temporalio/common';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { toApplicationFailure } from '../../../src/activities/failure.js';
import { GitError } from '../../../src/git/run.js';
import { ModelError } from '../../../src/model/errors.js';
import { ScriptError } from '../../../src/model/script.js';
import { PolicyConfigError } from '../../../src/policy/config.js';
import { KilnConfigError } from '../../../src/policy/repo-config.js';
import { ShellParseError } from '../../../src/shell/parse.js';
import { SandboxSpawnError, SandboxUnavailableError } from '../../../src/sandbox/errors.js';
import { DISK_FULL_FAILURE } from '../../../src/shared/constants.js';
import { CliError, exitCodeFor, KilnError, UsageError } from '../../../src/shared/errors.js';
import { TemporalCliError } from '../../../src/temporal/binary.js';
import { TemporalUnreachableError } from '../../../src/temporal/connection.js';
import { WorkspacePathError } from '../../../src/tools/safe-fs.js';
import { ROOT } from '../../helpers/repo.js';

const model = (kind: ConstructorParameters<typeof ModelError>[0], retryable: boolean, retryAfterMs?: number) =>
  new ModelError(kind, `${kind} happened`, { retryable, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) });

// [error, retryable, CLI exit code, ApplicationFailure type]
const table: Array<[KilnError, boolean, number, string]> = [
  [new KilnConfigError('.kiln/config: setup: expected array'), false, 2, 'KilnConfigError'],
  [new PolicyConfigError('.kiln/policy.json: invalid JSON'), false, 2, 'PolicyConfigError'],
  [new ScriptError('s.json', 'no such file'), false, 2, 'ScriptError'],
  [new UsageError('--repo DIR is required'), false, 2, 'UsageError'],
  [new CliError('bubblewrap is missing'), false, 1, 'CliError'],
  [new TemporalCliError('go is not installed'), false, 2, 'TemporalCliError'],
  [new TemporalUnreachableError('no server at localhost:7233'), true, 2, 'TemporalUnreachableError'],
  [new SandboxUnavailableError('bwrap is not installed'), false, 1, 'SandboxUnavailableError'],
  [new SandboxSpawnError('the sandbox failed to start'), true, 1, 'SandboxSpawnError'],
  [new WorkspacePathError('outside', 'x is outside the workspace'), false, 1, 'WorkspacePathError'],
  [new ShellParseError("unexpected '('"), false, 1, 'ShellParseError'],
  [new GitError(['worktree'], 'git worktree failed: index.lock exists'), true, 1, 'GitError'],
  [model('auth', false), false, 2, 'ModelFatalError'],
  [model('not_found', false), false, 2, 'ModelFatalError'],
  [model('bad_request', false), false, 1, 'ModelFatalError'],
  [model('script', false), false, 2, 'ScriptError'],
  [model('rate_limit', true, 1500), true, 1, 'ModelRetryableError'],
  [model('overloaded', true), true, 1, 'ModelRetryableError'],
];

describe('error classification', () => {
  it.each(table.map(([e, r, c, t]) => [e.name + (e instanceof ModelError ? `(${e.kind})` : ''), e, r, c, t] as const))(
    '%s: retryable and exit code as intended, and so is its ApplicationFailure',
    (_n, err, retryable, code, type) => {
      expect(err).toBeInstanceOf(KilnError);
      expect(err.retryable).toBe(retryable);
      expect(exitCodeFor(err)).toBe(code);
      const f = toApplicationFailure(err);
      expect(f).toBeInstanceOf(ApplicationFailure);
      expect(f).toMatchObject({ type, nonRetryable: !retryable });
    },
  );

  it("a model's retry-after becomes the next retry delay", () => {
    const f = toApplicationFailure(model('rate_limit', true, 1500)) as ApplicationFailure;
    expect(f.nextRetryDelay).toBe(1500);
  });

  it('a full disk, met by any activity and said by Node or by git, is the one wait: retried after 15 s, the activity named', () => {
    const node = Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
    const quota = Object.assign(new Error('EDQUOT: disk quota exceeded, open'), { code: 'EDQUOT' });
    const byGit = new GitError(['add'], 'git add failed: error: unable to write new index file: fatal: Out of diskspace');
    for (const err of [node, quota, byGit]) {
      const f = toApplicationFailure(err, 'currentTree') as ApplicationFailure;
      expect(f).toBeInstanceOf(ApplicationFailure);
      expect(f.type).toBe(DISK_FULL_FAILURE);
      expect(f.nonRetryable).toBe(false);
      expect(f.nextRetryDelay).toBe(15_000);
      expect(f.message).toMatch(/^the worker's disk is full \(currentTree\): .*free space on the worker/);
    }
    // a failure already made (a model turn's own) is not wrapped again
    const own = ApplicationFailure.create({ type: DISK_FULL_FAILURE, message: 'no space left on device (model turn 3)' });
    expect(toApplicationFailure(own, 'agentTurn')).toBe(own);
  });

  it('a failure message is redacted; an error that is not Kiln passes through unchanged', () => {
    const secret = `sk-ant-api03-${'a'.repeat(90)}`;
    const f = toApplicationFailure(new GitError([], `git failed: ${secret}`)) as ApplicationFailure;
    expect(f.message).not.toContain(secret);
    const plain = new Error('ENOSPC');
    expect(toApplicationFailure(plain)).toBe(plain);
    expect(exitCodeFor(plain)).toBe(1);
  });

  it('no error class in src but the root derives from Error directly: each one chooses its classification', () => {
    const files = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((d) =>
        d.isDirectory() ? files(join(dir, d.name)) : d.name.endsWith('.ts') ? [join(dir, d.name)] : [],
      );
    const direct = files(join(ROOT, 'src')).flatMap((f) =>
      [...readFileSync(f, 'utf8').matchAll(/class (\w+) extends (?:Error|TypeError|RangeError)\b/g)].map((m) => m[1]),
    );
    // HttpFailure, HttpError, LimitError, RequestError and Refusal are HTTP responses in flight (the scripted
    // model server, kiln serve, the codec server, an MCP server's egress proxy): each becomes a status and a body, never leaves its server.
    // IllegalTransitionError is a bug in workflow code: a plain Error fails the workflow task
    // (the run waits for fixed code and replays) instead of failing the run.
    // ModelStallError is the abort reason a stalled stream is cut with; the SDK wraps it into a ModelError
    expect(direct.sort()).toEqual([
      'HttpError',
      'HttpFailure',
      'IllegalTransitionError',
      'KilnError',
      'LimitError',
      'ModelStallError',
      'Refusal',
      'RequestError',
    ]);
  });
});
