/**
 * prepareWorkspace finds the repository's git dir and the base commit in one git call; the
 * answers are the same as one call each: the commit a ref names, a refusal that says which base
 * is wrong, and a retried prepare that keeps the base it recorded even after the branch moved.
 */
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createActivities, defaultDeps } from '../../../src/activities/index.js';
import { commitAll, git, repoWith } from '../../helpers/repo.js';
import { testInput } from '../../helpers/run-input.js';

const acts = () => createActivities({ ...defaultDeps(), hostQueue: 'unit-host' });
const head = (repo: string) => git(repo, 'rev-parse', 'HEAD').trim();

describe('prepareWorkspace: the base commit', () => {
  it('HEAD by default, a named ref when given; the .kiln/ exclude is written to the common git dir', async () => {
    const repo = repoWith({ 'a.txt': 'one\n' });
    const first = head(repo);
    writeFileSync(join(repo, 'a.txt'), 'two\n');
    commitAll(repo, 'second');
    const env = new MockActivityEnvironment();
    expect((await env.run(acts().prepareWorkspace, testInput({ repo, model: 'scripted:/dev/null' }))).baseCommit).toBe(head(repo));
    expect((await env.run(acts().prepareWorkspace, testInput({ repo, model: 'scripted:/dev/null', base: 'HEAD~1' }))).baseCommit).toBe(first);
    expect(git(repo, 'check-ignore', '.kiln/x').trim()).toBe('.kiln/x');
  });

  it('a base that is no commit is refused, non-retryable, naming it', async () => {
    const repo = repoWith({ 'a.txt': 'one\n' });
    const err = await new MockActivityEnvironment().run(acts().prepareWorkspace, testInput({ repo, model: 'scripted:/dev/null', base: 'no-such-ref' })).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ApplicationFailure);
    expect(err).toMatchObject({ nonRetryable: true, message: expect.stringMatching(/^base no-such-ref is not a commit in /) });
  });

  it('a retried prepare keeps the recorded base, though the branch moved on', async () => {
    const repo = repoWith({ 'a.txt': 'one\n' });
    const input = testInput({ repo, model: 'scripted:/dev/null' });
    const env = new MockActivityEnvironment();
    const first = await env.run(acts().prepareWorkspace, input);
    writeFileSync(join(repo, 'a.txt'), 'two\n');
    commitAll(repo, 'moved');
    expect((await env.run(acts().prepareWorkspace, input)).baseCommit).toBe(first.baseCommit);
    expect(first.baseCommit).not.toBe(head(repo));
  });
});
