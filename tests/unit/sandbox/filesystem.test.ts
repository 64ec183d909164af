import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { createSandbox, type Sandbox } from '../../../src/sandbox/index.js';
import { cleanupTempDirs, git, makeRepo, tempDir, uniqueMarker } from './helpers.js';

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await createSandbox({ mode: 'bwrap' });
});
afterAll(cleanupTempDirs);

const run = (command: string, workspace: string, extra: { env?: Record<string, string> } = {}) =>
  sandbox.run(command, { workspace, timeoutMs: 10_000, ...extra });

describe('writes', () => {
  test('a write inside the worktree lands on the host', async () => {
    const ws = tempDir('ws');
    const r = await run('echo hello > made-inside.txt && mkdir -p a/b && echo deep > a/b/c.txt', ws);
    expect(r.exitCode).toBe(0);
    expect(r.sandboxed).toBe(true);
    expect(readFileSync(join(ws, 'made-inside.txt'), 'utf8')).toBe('hello\n');
    expect(readFileSync(join(ws, 'a/b/c.txt'), 'utf8')).toBe('deep\n');
  });

  test('a write to a host directory outside the worktree fails and leaves no file', async () => {
    const ws = tempDir('ws');
    // /var is not among the allowlisted system directories (/var/tmp inside is the private /tmp)
    const outside = tempDir('outside', existsSync('/var/tmp') ? '/var/tmp' : undefined);
    const target = join(outside, 'escaped.txt');
    const r = await run(`echo leak > '${target}'; mkdir -p /kiln-at-root; echo "mkdir:$?"`, ws);
    expect(r.output).toMatch(/No such file or directory/);
    // the sandbox's own root is read-only too: nothing can be made beside the bound directories
    expect(r.output).toMatch(/Read-only file system[\s\S]*mkdir:1/);
    expect(existsSync(target)).toBe(false);
  });

  test('a write to /etc fails and leaves no file', async () => {
    const ws = tempDir('ws');
    const target = `/etc/${uniqueMarker('etc')}`;
    const r = await run(`echo leak > ${target}`, ws);
    expect(r.exitCode).not.toBe(0);
    expect(existsSync(target)).toBe(false);
  });

  test('the host /tmp is replaced by a private one: a file written there never reaches the host', async () => {
    const ws = tempDir('ws');
    const name = `/tmp/${uniqueMarker('tmp')}`;
    const r = await run(`echo private > ${name} && cat ${name}`, ws);
    expect(r.exitCode).toBe(0);
    expect(r.output).toBe('private\n');
    expect(existsSync(name)).toBe(false);
  });
});

describe('.git stays read-only', () => {
  test('in a linked worktree: the .git pointer, the main repo config and hooks cannot be changed, git still reads', async () => {
    const repo = makeRepo();
    const wt = join(tempDir('wtparent'), 'wt');
    git(repo, 'worktree', 'add', '-q', '-b', 'kiln-run', wt);
    const configBefore = readFileSync(join(repo, '.git/config'), 'utf8');
    const pointerBefore = readFileSync(join(wt, '.git'), 'utf8');

    const r = await run(
      [
        `echo '[core]' >> '${repo}/.git/config'; echo "config:$?"`,
        `echo 'touch /tmp/pwned' > '${repo}/.git/hooks/pre-commit'; echo "hook:$?"`,
        `echo 'gitdir: /' > .git; echo "pointer:$?"`,
        `echo x > '${repo}/.git/worktrees/wt/HEAD'; echo "wthead:$?"`,
        'git log --format=%s -1; echo "log:$?"',
        'echo work > file.txt; echo "worktree:$?"',
      ].join('\n'),
      wt,
    );
    expect(r.output).toMatch(/config:[1-9]/);
    expect(r.output).toMatch(/hook:[1-9]/);
    expect(r.output).toMatch(/pointer:[1-9]/);
    expect(r.output).toMatch(/wthead:[1-9]/);
    // control: git inside can read the repository, and the worktree itself is writable
    expect(r.output).toContain('initial\nlog:0');
    expect(r.output).toContain('worktree:0');
    expect(readFileSync(join(wt, 'file.txt'), 'utf8')).toBe('work\n');
    expect(readFileSync(join(repo, '.git/config'), 'utf8')).toBe(configBefore);
    expect(readFileSync(join(wt, '.git'), 'utf8')).toBe(pointerBefore);
    expect(existsSync(join(repo, '.git/hooks/pre-commit'))).toBe(false);
  });

  test('in a plain checkout: .git/hooks cannot be written, the files beside it can', async () => {
    const repo = makeRepo();
    const r = await run('echo evil > .git/hooks/x; echo "hook:$?"; echo ok > src.txt; echo "src:$?"', repo);
    expect(r.output).toMatch(/hook:[1-9]/);
    expect(r.output).toContain('src:0');
    expect(existsSync(join(repo, '.git/hooks/x'))).toBe(false);
    expect(existsSync(join(repo, 'src.txt'))).toBe(true);
  });

  test('a repository under the masked HOME stays usable (read-only) from a worktree in /tmp', async () => {
    const repo = makeRepo(homedir());
    const wt = join(tempDir('wtparent'), 'wt');
    git(repo, 'worktree', 'add', '-q', '-b', 'kiln-run', wt);
    const r = await run(`git status --short; echo "status:$?"; echo x >> '${repo}/.git/config'; echo "config:$?"; echo "listing:$(ls -A '${repo}')"`, wt);
    expect(r.output).toContain('status:0');
    expect(r.output).toMatch(/config:[1-9]/);
    // only the git directory is exposed, not the rest of HOME
    expect(existsSync(join(repo, 'README.md'))).toBe(true);
    expect(r.output).toContain('listing:.git\n');
  });
});

describe('secrets', () => {
  test('a file under the real HOME cannot be read; a file in the worktree can', async () => {
    const ws = tempDir('ws');
    const secret = uniqueMarker('secret');
    const secretFile = join(homedir(), `.${uniqueMarker('secretfile')}`);
    writeFileSync(secretFile, `${secret}\n`, { mode: 0o600 });
    writeFileSync(join(ws, 'visible.txt'), 'visible-value\n');
    try {
      const r = await run(`cat '${secretFile}'; cat visible.txt; ls -a ~ "${homedir()}"`, ws);
      expect(r.output).toContain('No such file');
      expect(r.output).not.toContain(secret);
      expect(r.output).toContain('visible-value');
    } finally {
      rmSync(secretFile, { force: true });
    }
  });

  test('tokens in the worker environment are not passed on; allowlisted and explicit variables are', async () => {
    const ws = tempDir('ws');
    const saved = { a: process.env.ANTHROPIC_API_KEY, g: process.env.GITHUB_TOKEN };
    process.env.ANTHROPIC_API_KEY = 'sk-ant-kiln-test-should-not-leak';
    process.env.GITHUB_TOKEN = 'ghp_kilnTestShouldNotLeak';
    try {
      const r = await run('env', ws, { env: { KILN_EXTRA: 'given-by-caller' } });
      expect(r.output).not.toContain('sk-ant-kiln-test-should-not-leak');
      expect(r.output).not.toContain('ghp_kilnTestShouldNotLeak');
      expect(r.output).not.toMatch(/^ANTHROPIC_API_KEY=/m);
      expect(r.output).toMatch(/^CI=1$/m);
      expect(r.output).toMatch(/^TERM=dumb$/m);
      expect(r.output).toMatch(/^KILN_EXTRA=given-by-caller$/m);
      expect(r.output).toMatch(/^HOME=\/tmp\/home$/m);
    } finally {
      if (saved.a === undefined) delete process.env.ANTHROPIC_API_KEY;
      else process.env.ANTHROPIC_API_KEY = saved.a;
      if (saved.g === undefined) delete process.env.GITHUB_TOKEN;
      else process.env.GITHUB_TOKEN = saved.g;
    }
  });

  test('node and npm are on PATH inside', async () => {
    const ws = tempDir('ws');
    const r = await run('node -e "console.log(1+1)" && npm --version', ws);
    expect(r.exitCode).toBe(0);
    expect(r.output).toMatch(/^2\n\d+\.\d+/);
  });
});
