/**
 * `ln .env notes.txt` shipped the credential in the patch under an innocent name. The
 * verify activity fails a tree that adds a hard link to a file of the worktree; the same change
 * made as an ordinary new file passes.
 */
import { MockActivityEnvironment } from '@temporalio/testing';
import { linkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createActivities, defaultDeps } from '../../../src/activities/index.js';
import { repoWith, testKilnHome } from '../../helpers/repo.js';
import { testInput } from '../../helpers/run-input.js';

async function verifyAfter(change: (worktree: string) => void) {
  const repo = repoWith({ '.env': 'API_TOKEN=plain-value-from-env\n', 'a.txt': 'x\n' });
  const input = testInput({ repo, model: 'scripted:/dev/null', allowUnverified: true });
  const acts = createActivities({ ...defaultDeps({ ...process.env, KILN_HOME: testKilnHome() }), hostQueue: 'unit-host' });
  const env = new MockActivityEnvironment();
  const prep = await env.run(acts.prepareWorkspace, input);
  change(prep.worktree);
  return env.run(acts.verify, { repo, runId: input.runId, attempt: 1, gateSatisfied: true });
}

describe('verify: a hard link to another file of the worktree', () => {
  it('attack: `ln .env notes.txt` fails the verdict, naming the link', async () => {
    const v = await verifyAfter((wt) => linkSync(join(wt, '.env'), join(wt, 'notes.txt')));
    expect(v.pass).toBe(false);
    expect(v.summary).toContain('the patch adds a hard link (2 names for one file): notes.txt');
  });

  it('control: notes.txt written as a file of its own passes', async () => {
    const v = await verifyAfter((wt) => writeFileSync(join(wt, 'notes.txt'), 'meeting notes\n'));
    expect(v.summary).not.toContain('hard link');
    expect(v.pass).toBe(true);
  });
});
