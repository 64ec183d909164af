/**
 * The worker's start-up line says what the sandbox probe proved on this host — allowlisted
 * system dirs, masked secrets, an unprivileged user, the keyring, setup's network without the
 * host's loopback — from the probe's own results, so a host that cannot give one is not told it has it.
 */
import { describe, expect, it } from 'vitest';
import { clearProbeCache, createSandbox, probeSummary, type ProbeResult } from '../../../src/sandbox/index.js';
import { sandboxStatus } from '../../../src/worker.js';

describe('the sandbox status line', () => {
  it('on this host lists each guarantee the probe proved, setup network included', async () => {
    const line = await sandboxStatus();
    console.log(line);
    expect(line).toMatch(/^sandbox: bubblewrap probe passed — /);
    for (const said of [
      'only the worktree writable',
      'only allowlisted system dirs',
      'secrets in the worktree masked',
      'keyring not shared',
      'no network',
      "setup network without the host's loopback",
    ]) {
      expect(line).toContain(said);
    }
    expect(line).toMatch(/unprivileged user/);
    expect(line).toMatch(/limits: .*tmpfs/);
    expect(line).not.toContain('no HOME, no network');
  });

  it('without slirp4netns the same probe says setup needing the network is refused, not isolated', async () => {
    clearProbeCache();
    const sandbox = await createSandbox({ mode: 'bwrap', slirpPath: null, allowSetupHostNetwork: false });
    const line = probeSummary(sandbox.probe!);
    expect(line).not.toContain("setup network without the host's loopback");
    expect(line).toMatch(/setup network does not reach the host's loopback: setup commands needing the network are refused: slirp4netns.* not installed/);
    clearProbeCache();
  });

  it('what a host did not allow, or a leak, is said as found and never as a guarantee', () => {
    const probe: ProbeResult = {
      ok: false,
      checks: [
        {
          name: 'unprivileged user',
          ok: true,
          detail: 'NOT in a user namespace (bwrap: setting up uid map: Permission denied); commands run with no capabilities',
        },
        { name: 'kernel keyring is not shared', ok: true, detail: 'NOT isolated: no seccomp filter for s390x' },
        { name: 'files under HOME are hidden', ok: true, detail: 'not tested: could not create a marker in /home/x' },
        { name: 'sensitive files in the worktree are masked', ok: false, detail: 'LEAK: grep -r or a hard link read .env inside' },
      ],
    };
    const line = probeSummary(probe);
    expect(line).toMatch(/^sandbox: bubblewrap probe FAILED/);
    expect(line).toContain('unprivileged user: NOT in a user namespace');
    expect(line).not.toContain('unprivileged user in a user namespace');
    expect(line).toContain('kernel keyring is not shared: NOT isolated');
    expect(line).not.toContain('keyring not shared');
    expect(line).toContain('HOME hidden (not tested: could not create a marker');
    expect(line).toContain('FAILED sensitive files in the worktree are masked: LEAK');
  });
});
