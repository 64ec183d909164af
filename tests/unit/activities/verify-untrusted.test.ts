/**
 * An untrusted repo's `.kiln/config` setup and link are ignored at prepare — and at
 * verify and the baseline too, which read the checkout's file again and ran its setup (with
 * network) whenever the user gave a check of their own. They now use what prepare honoured.
 */
import { MockActivityEnvironment } from '@temporalio/testing';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createActivities, defaultDeps } from '../../../src/activities/index.js';
import { trustRepo } from '../../../src/policy/trust.js';
import { repoWith } from '../../helpers/repo.js';
import { testInput } from '../../helpers/run-input.js';

async function verifyWithOwnCheck(trusted: boolean) {
  const repo = repoWith({
    '.gitignore': 'vendor\n',
    'a.txt': 'x\n',
    '.kiln/config': JSON.stringify({ setup: ['echo repo-setup-ran'], link: ['vendor'] }),
  });
  mkdirSync(join(repo, 'vendor'));
  writeFileSync(join(repo, 'vendor', 'lib.js'), "module.exports = 'vendor-linked';\n");
  const home = mkdtempSync(join(tmpdir(), 'kiln-test-home-'));
  if (trusted) trustRepo(repo, home);
  // the user's own check looks for the linked dependency
  const check = `node -e "console.log(require('./vendor/lib.js'))" 2>&1 || true`;
  const input = testInput({ repo, model: 'scripted:/dev/null', checks: [check] });
  const acts = createActivities({ ...defaultDeps({ ...process.env, KILN_HOME: home }), hostQueue: 'unit-host' });
  const env = new MockActivityEnvironment();
  const prep = await env.run(acts.prepareWorkspace, input);
  writeFileSync(join(prep.worktree, 'a.txt'), 'y\n');
  await env.run(acts.verify, { repo, runId: input.runId, attempt: 1, gateSatisfied: true });
  return readFileSync(join(repo, '.kiln', 'runs', input.runId, 'tests.log'), 'utf8');
}

describe("verify and the baseline honour only what prepare did of the repo's config", () => {
  it('attack: untrusted, the repo setup never runs and vendor is not linked, in the baseline or the verify tree', async () => {
    const log = await verifyWithOwnCheck(false);
    expect(log).toContain('--- baseline');
    expect(log).not.toContain('repo-setup-ran');
    expect(log).not.toContain('vendor-linked');
  });

  it('control: trusted, both run there', async () => {
    const log = await verifyWithOwnCheck(true);
    expect(log.match(/\$ echo repo-setup-ran {3}\(setup\)/g)?.length).toBeGreaterThanOrEqual(2);
    expect(log).toContain('vendor-linked');
  });
});
