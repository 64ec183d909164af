/**
 * prepareWorkspace holds a setup the policy names (approvals.setup): nothing of it runs until the
 * workflow comes back with the approved list's hash, and then only that exact list runs. A
 * setup changed after its approval, or found by a rebuild that nobody approved, ends the run.
 */
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createActivities, defaultDeps } from '../../../src/activities/index.js';
import { repoWith } from '../../helpers/repo.js';
import { testInput } from '../../helpers/run-input.js';

const acts = () => createActivities({ ...defaultDeps(), hostQueue: 'unit-host' });
const SETUP = ['echo fetched > setup-marker.txt'];

function named(policy: unknown = { approvals: { setup: ['echo*'] } }) {
  const repo = repoWith({ 'a.txt': 'one\n', '.kiln/policy.json': JSON.stringify(policy) });
  return { repo, input: testInput({ repo, model: 'scripted:/dev/null', setup: SETUP }) };
}

const refusal = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e,
  );

describe('prepareWorkspace: a setup the policy names waits for its approvers', () => {
  it('held: nothing runs and the result names the commands, the rule and the hash; with that hash, exactly it runs', async () => {
    const { input } = named();
    const env = new MockActivityEnvironment();
    const held = await env.run(acts().prepareWorkspace, input, undefined, { baselineApart: true, approvals: true });
    expect(held.setupHeld).toMatchObject({ commands: SETUP, rule: 'approvals.setup', needs: { approvers: 1, authenticated: false } });
    expect(held.setupHeld!.hash).toMatch(/^[0-9a-f]{64}$/);
    expect(existsSync(join(held.worktree, 'setup-marker.txt'))).toBe(false);

    const ran = await env.run(acts().prepareWorkspace, input, undefined, { baselineApart: true, approvals: true, setupApproved: held.setupHeld!.hash });
    expect(ran.ok).toBe(true);
    expect(ran.setupHeld).toBeUndefined();
    expect(readFileSync(join(ran.worktree, 'setup-marker.txt'), 'utf8')).toBe('fetched\n');
  });

  it('attack: an approval for another setup list does not run this one; a rebuild that finds an unapproved one refuses', async () => {
    const { input } = named();
    const env = new MockActivityEnvironment();
    const other = await refusal(env.run(acts().prepareWorkspace, input, undefined, { baselineApart: true, approvals: true, setupApproved: 'f'.repeat(64) }));
    expect(other).toBeInstanceOf(ApplicationFailure);
    expect(other).toMatchObject({ nonRetryable: true, message: expect.stringContaining('the setup changed after it was approved') });
    const rebuilt = await refusal(env.run(acts().prepareWorkspace, input, { lostHost: 'gone', turn: 0 }, { approvals: true }));
    expect(rebuilt).toMatchObject({ nonRetryable: true, message: expect.stringContaining('the setup changed after it was approved') });
    const wt = (await env.run(acts().prepareWorkspace, input, undefined, { baselineApart: true, approvals: true })).worktree;
    expect(existsSync(join(wt, 'setup-marker.txt'))).toBe(false);
  });

  it('control: a setup no rule names runs at once, and a workflow from before the patch (no approvals option) is not held', async () => {
    const { input } = named({ approvals: { setup: ['npm ci'] } });
    const ran = await new MockActivityEnvironment().run(acts().prepareWorkspace, input, undefined, { baselineApart: true, approvals: true });
    expect(ran.setupHeld).toBeUndefined();
    expect(existsSync(join(ran.worktree, 'setup-marker.txt'))).toBe(true);
    const old = named();
    const before = await new MockActivityEnvironment().run(acts().prepareWorkspace, old.input, undefined, { baselineApart: true });
    expect(before.setupHeld).toBeUndefined();
    expect(existsSync(join(before.worktree, 'setup-marker.txt'))).toBe(true);
  });
});
