import { describe, expect, it } from 'vitest';
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
