/**
 * `.kiln/config` `link` and `include` bring ignored files of the checkout into the
 * worktree and the sandbox. They are loosenings (only once the repo is trusted), and an entry that
 * resolves outside the repo — a symlink `vendor -> /var/tmp/x` — is refused even then.
 */
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { createActivities, defaultDeps } from '../../../src/activities/index.js';
import { writeJsonAtomic } from '../../../src/store/run-files.js';
import { callPath } from '../../../src/activities/tool-results.js';
import { trustRepo } from '../../../src/policy/trust.js';
import { repoWith } from '../../helpers/repo.js';
import { testInput } from '../../helpers/run-input.js';

const value = `kiln_linked_${randomBytes(6).toString('hex')}`;
const outside = mkdtempSync('/var/tmp/kiln-test-outside-');
writeFileSync(join(outside, 'lib.js'), `module.exports = '${value}';\n`);
afterAll(() => rmSync(outside, { recursive: true, force: true }));

/** A repo whose ignored `vendor` is made by `make`, with `.kiln/config` naming it under `key`. */
function repoWithVendor(key: 'link' | 'include', make: (vendor: string) => void): string {
  const repo = repoWith({ '.gitignore': 'vendor\n', 'a.txt': 'x\n', '.kiln/config': JSON.stringify({ [key]: ['vendor'] }) });
  make(join(repo, 'vendor'));
  return repo;
}
const realVendor = (vendor: string) => {
  mkdirSync(vendor);
  writeFileSync(join(vendor, 'lib.js'), `module.exports = '${value}';\n`);
};

async function prepareAndCat(repo: string, trusted: boolean) {
  const home = mkdtempSync(join(tmpdir(), 'kiln-test-home-'));
  if (trusted) trustRepo(repo, home);
  const input = testInput({ repo, model: 'scripted:/dev/null' });
  const acts = createActivities({ ...defaultDeps({ ...process.env, KILN_HOME: home }), hostQueue: 'unit-host' });
  const env = new MockActivityEnvironment();
  const prep = await env.run(acts.prepareWorkspace, input).catch((e: unknown) => e);
  if (prep instanceof Error) return { error: prep };
  // as a dependency is used (the file tools, cat included, refuse a path through the link)
  const command = `node -e "console.log(require('./vendor/lib.js'))" 2>&1; true`;
  await writeJsonAtomic(callPath(repo, input.runId, 'toolu_1'), { id: 'toolu_1', name: 'run_command', input: { command, reason: 'look' } });
  const res = await env.run(acts.runTool, { runId: input.runId, repo, toolUseId: 'toolu_1', grants: [] });
  expect(res).toMatchObject({ status: 'done' });
  const events = readFileSync(join(repo, '.kiln', 'runs', input.runId, 'events.jsonl'), 'utf8');
  return { output: readFileSync(join(repo, '.kiln', 'runs', input.runId, 'outputs', 'toolu_1.log'), 'utf8'), events };
}

describe('.kiln/config link and include', () => {
  for (const key of ['link', 'include'] as const) {
    it(`attack: a symlink to a host directory named in ${key} is refused, though the repo is trusted`, async () => {
      const repo = repoWithVendor(key, (vendor) => symlinkSync(outside, vendor));
      const r = await prepareAndCat(repo, true);
      expect(r.error).toBeInstanceOf(ApplicationFailure);
      expect(r.error).toMatchObject({ nonRetryable: true, message: expect.stringMatching(/include\/link: "vendor" resolves outside the repo/) });
    });
  }

  it('attack: a parent directory that is a symlink counts too (vendor/sub where vendor points out)', async () => {
    mkdirSync(join(outside, 'sub'), { recursive: true });
    const repo = repoWith({ '.gitignore': 'vendor\n', 'a.txt': 'x\n', '.kiln/config': JSON.stringify({ link: ['vendor/sub'] }) });
    symlinkSync(outside, join(repo, 'vendor'));
    const r = await prepareAndCat(repo, true);
    expect(r.error).toMatchObject({ message: expect.stringMatching(/"vendor\/sub" resolves outside the repo/) });
  });

  it('attack: an untrusted repo links nothing and says so', async () => {
    const r = await prepareAndCat(repoWithVendor('link', realVendor), false);
    expect(r.output).not.toContain(value);
    expect(r.events).toMatch(/\.kiln\/config link \[\\"vendor\\"\]: ignored, the repo's configuration is not trusted/);
  });

  it('control: a real in-repo directory is linked, read-only and readable, once trusted; so is an include copied', async () => {
    const linked = await prepareAndCat(repoWithVendor('link', realVendor), true);
    expect(linked.output).toContain(value);
    const included = await prepareAndCat(repoWithVendor('include', realVendor), true);
    expect(included.output).toContain(value);
  });
});
