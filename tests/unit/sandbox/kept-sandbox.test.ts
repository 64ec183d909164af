/**
 * Read-only commands of a worktree run one after another in one kept sandbox. Each attack is
 * something a command could leave behind for the next one, or a way to make its result lie; the
 * controls show the sandbox really is kept when nothing was left (else the attacks prove nothing).
 * Which sandbox a command ran in is told by its PID namespace (/proc/self/ns/pid).
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { execFileSync } from 'node:child_process';
import { renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { removeWorktree } from '../../../src/activities/workspace.js';
import { discardKeptSandboxes, keptCount, MAX_KEPT } from '../../../src/sandbox/kept-sandbox.js';
import { createSandbox, type CommandOptions, type Sandbox } from '../../../src/sandbox/index.js';
import { cleanupTempDirs, tempDir } from './helpers.js';

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await createSandbox({ mode: 'bwrap' });
});
afterEach(() => {
  discardKeptSandboxes();
  delete process.env.KILN_KEEP_READER_SANDBOX;
});
afterAll(cleanupTempDirs);

function worktree(): string {
  const ws = tempDir('kept-ws');
  writeFileSync(join(ws, 'a.txt'), 'alpha\n');
  writeFileSync(join(ws, '.env'), 'API_TOKEN=sk-live-kept-secret\n');
  return ws;
}

/**
 * Tests that need two readers to share one sandbox are run again if they did not: the host's /etc
 * can change under parallel tests (another worker's sandbox probe makes and removes a private file
 * there), and a new private file rightly gives the next reader a new sandbox. A kill or a check
 * that does not work fails every try.
 */
const SAME_SANDBOX = { retry: 4 };

const read = (ws: string, command: string, o: Partial<CommandOptions> = {}) =>
  sandbox.run(command, { workspace: ws, workspaceReadOnly: true, timeoutMs: 15_000, ...o });

/** the PID namespace the command ran in */
async function ns(ws: string, o: Partial<CommandOptions> = {}): Promise<string> {
  const r = await read(ws, 'readlink /proc/self/ns/pid', o);
  expect(r.exitCode).toBe(0);
  return r.output.trim();
}

describe('the kept sandbox for read-only commands', () => {
  test(
    'control: readers share one sandbox, each in a fresh shell; a writer runs in its own, and what it wrote is seen by the next reader',
    SAME_SANDBOX,
    async () => {
      const ws = worktree();
      const first = await ns(ws);
      expect(first).toMatch(/^pid:\[\d+\]$/);
      const r = await read(ws, 'cd /tmp; X=set; f() { :; }; alias ll=ls; echo in');
      expect(r).toMatchObject({ exitCode: 0, output: 'in\n', sandboxed: true, workspaceReadOnly: true });
      const fresh = await read(ws, 'pwd; echo "x=${X-unset}"; type f 2>&1 | head -1; alias ll 2>&1');
      expect(fresh.output).toContain(`${ws}\nx=unset\n`);
      expect(fresh.output).toMatch(/f: not found/);
      expect(fresh.output).toMatch(/ll: not found/);
      expect(await ns(ws)).toBe(first);
      expect(keptCount()).toBe(1);

      const w = await sandbox.run('echo made > made.txt; readlink /proc/self/ns/pid', { workspace: ws, timeoutMs: 15_000 });
      expect(w.workspaceReadOnly).toBeUndefined();
      expect(w.output).not.toContain(first);
      const after = await read(ws, 'cat made.txt; readlink /proc/self/ns/pid');
      expect(after.output).toBe(`made\n${first}\n`);
    },
  );

  test('control: with KILN_KEEP_READER_SANDBOX=0 every reader gets a sandbox of its own', async () => {
    process.env.KILN_KEEP_READER_SANDBOX = '0';
    const ws = worktree();
    expect(await ns(ws)).not.toBe(await ns(ws));
    expect(keptCount()).toBe(0);
  });

  test('attack: the helper keeps its fd and its variables from the command', async () => {
    const ws = worktree();
    const r = await read(
      ws,
      'echo "nonce=${kiln_nonce-unset} cmd=${kiln_command-unset}"; set | grep -c "^kiln_"; [ -e /proc/$BASHPID/fd/6 ] && echo fd-open || echo fd-closed',
    );
    expect(r.output).toBe('nonce=unset cmd=unset\n0\nfd-closed\n');
  });

  test('attack: what a reader leaves running is killed before the next command; control: it was running', SAME_SANDBOX, async () => {
    const ws = worktree();
    const first = await read(ws, '(sleep 300 &) ; sleep 0.2; cat /proc/[0-9]*/comm; readlink /proc/self/ns/pid');
    expect(first.output).toMatch(/^sleep$/m);
    const id = first.output.trim().split('\n').pop()!;
    const next = await read(ws, 'cat /proc/[0-9]*/comm; readlink /proc/self/ns/pid');
    expect(next.output).not.toMatch(/^sleep$/m);
    // it was killed, not escaped by a new sandbox
    expect(next.output).toContain(id);
  });

  test(
    'attack: a file left in /tmp or HOME is never seen by the next command, which gets a fresh sandbox; control: a reader that leaves nothing keeps it',
    SAME_SANDBOX,
    async () => {
      const ws = worktree();
      const first = await ns(ws);
      expect(await ns(ws)).toBe(first);
      await read(ws, 'echo planted > /tmp/planted; echo planted > "$HOME/.profile-planted"');
      const next = await read(ws, 'cat /tmp/planted "$HOME/.profile-planted" 2>&1; readlink /proc/self/ns/pid');
      expect(next.output).not.toContain('planted\n');
      expect(next.output).not.toContain(first);
    },
  );

  test('attack: output that carries an end marker does not end the command or set its exit code', async () => {
    const ws = worktree();
    const r = await read(ws, "printf '\\0kiln-kept 00000000000000000000000000000000 0 1\\n'; echo still; exit 3");
    expect(r.exitCode).toBe(3);
    expect(r.output).toContain('still\n');
    // and the sandbox still serves the next command correctly
    const next = await read(ws, 'echo next');
    expect(next).toMatchObject({ exitCode: 0, output: 'next\n' });
  });

  test('attack: a masked file replaced on the host, or a new one made, is masked for the next reader; control: the mask holds', async () => {
    const ws = worktree();
    const first = await read(ws, 'cat .env; readlink /proc/self/ns/pid');
    expect(first.output).not.toContain('sk-live');
    // a new inode at the masked path: the mount made on the old one would not cover it
    writeFileSync(join(ws, '.env.new'), 'API_TOKEN=sk-live-replaced\n');
    renameSync(join(ws, '.env.new'), join(ws, '.env'));
    const next = await read(ws, 'cat .env; readlink /proc/self/ns/pid');
    expect(next.output).not.toContain('sk-live');
    const replaced = next.output.trim().split('\n').pop()!;
    expect(replaced).not.toBe(first.output.trim().split('\n').pop()!);
    // a credential file that was not there when the sandbox was set up
    writeFileSync(join(ws, 'id_rsa'), '-----BEGIN OPENSSH PRIVATE KEY-----\nsk-live-key\n');
    const last = await read(ws, 'cat id_rsa; readlink /proc/self/ns/pid');
    expect(last.output).not.toContain('sk-live');
    expect(last.output).not.toContain(replaced);
  });

  test('attack: a reader that outlives its timeout, or is cancelled, is killed with its sandbox; the next command gets a new one', async () => {
    const ws = worktree();
    const first = await ns(ws);
    const slow = await read(ws, 'echo started; sleep 30', { timeoutMs: 300 });
    expect(slow).toMatchObject({ timedOut: true, exitCode: null });
    expect(slow.output).toContain('started');
    const second = await ns(ws);
    expect(second).not.toBe(first);

    const ac = new AbortController();
    setTimeout(() => ac.abort(), 300);
    const cancelled = await read(ws, 'sleep 30', { signal: ac.signal });
    expect(cancelled).toMatchObject({ aborted: true, exitCode: null });
    expect(await ns(ws)).not.toBe(second);
  });

  test(`at most ${MAX_KEPT} are kept, and the one let go is never one a command runs in`, async () => {
    const busy = worktree();
    const slow = read(busy, 'sleep 1; echo finished');
    for (let i = 0; i < MAX_KEPT + 2; i++) expect((await read(worktree(), 'echo ok')).output).toBe('ok\n');
    expect(keptCount()).toBeLessThanOrEqual(MAX_KEPT);
    expect(await slow).toMatchObject({ exitCode: 0, output: 'finished\n' });
  }, 60_000);

  test("a worktree's kept sandbox goes with the worktree when its run removes it", async () => {
    const repo = worktree();
    const git = (...args: string[]) => execFileSync('git', ['-c', 'user.name=k', '-c', 'user.email=k@k', ...args], { cwd: repo });
    git('init', '-q');
    git('add', '-A');
    git('commit', '-qm', 'base');
    const wt = join(repo, '..', `${repo.split('/').pop()}-wt`);
    git('worktree', 'add', '-q', '--detach', wt);
    expect((await read(wt, 'cat a.txt')).output).toBe('alpha\n');
    expect(keptCount()).toBe(1);
    await removeWorktree(repo, wt);
    expect(keptCount()).toBe(0);
  });

  test('a reader with other options (another environment) gets a sandbox of its own', async () => {
    const ws = worktree();
    const first = await ns(ws);
    expect(await ns(ws, { env: { EXTRA: '1' } })).not.toBe(first);
  });
});
