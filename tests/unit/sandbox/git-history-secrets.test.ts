/**
 * A secret committed once and deleted since is not readable in the sandbox at any commit: the
 * repository a command sees (activities/git-view.ts) has every commit and tree but not the blobs
 * that sat at a sensitive path, so `git log -p`, `git show OLD:.env` and `git cat-file` on the
 * blob fail instead of printing it, in any encoding. Controls: history, diffs and the other
 * files' old versions stay readable.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { gitView, type GitView } from '../../../src/activities/git-view.js';
import { isSensitivePath } from '../../../src/policy/globs.js';
import { createSandbox } from '../../../src/sandbox/index.js';
import type { Sandbox } from '../../../src/sandbox/types.js';

const SECRET = 'sk_live_51HistoryOnlyKey9f8e7d6c5b4a';
const DB_PASSWORD = 'hunter2-correct-horse-battery';
let sandbox: Sandbox;
let wt: string;
let view: GitView;
let secretBlob: string;

const sh = (cwd: string, ...args: string[]) => execFileSync('git', ['-c', 'user.email=t@t', '-c', 'user.name=t', ...args], { cwd, encoding: 'utf8' }).trim();

beforeAll(async () => {
  sandbox = await createSandbox({ mode: 'bwrap' });
  const root = mkdtempSync(join(tmpdir(), 'kiln-history-'));
  const repo = join(root, 'repo');
  execFileSync('git', ['init', '-q', repo]);
  writeFileSync(join(repo, 'app.js'), 'module.exports = 1;\n');
  writeFileSync(join(repo, '.env'), `STRIPE_KEY=${SECRET}\n`);
  writeFileSync(join(repo, 'secrets.json'), `{"db": "${DB_PASSWORD}"}\n`);
  sh(repo, 'add', '-A');
  sh(repo, 'commit', '-qm', 'first');
  secretBlob = sh(repo, 'rev-parse', 'HEAD:.env');
  sh(repo, 'rm', '-q', '.env', 'secrets.json');
  writeFileSync(join(repo, 'app.js'), 'module.exports = 2;\n');
  sh(repo, 'commit', '-qam', 'second: secrets out');
  const base = sh(repo, 'rev-parse', 'HEAD');
  wt = join(root, 'wt');
  sh(repo, 'worktree', 'add', '-q', '--detach', wt, base);
  view = await gitView(repo, base, (p) => isSensitivePath(p) || p === 'secrets.json', 'test', join(root, 'views'));
});

const run = async (command: string) => {
  const res = await sandbox.run(command, { workspace: wt, timeoutMs: 30_000, gitView: view });
  return res.output;
};

describe('history without the sensitive blobs', () => {
  const attacks: Array<[string, string]> = [
    ['git log -p --all', 'git log -p --all'],
    ['git show of the old commit', 'git show HEAD~1:.env; git show HEAD~1:secrets.json'],
    ['reversed', 'git log -p --all | rev'],
    ['as hex', 'git log -p --all | od -An -tx1 | tr -d " \\n"'],
    ['the blob by id', `git cat-file -p ${'$'}(git rev-parse HEAD~1:.env)`],
    ['a diff between the commits', 'git diff HEAD~1 HEAD'],
    [
      'every object in the store',
      'for f in $(find "$(git rev-parse --git-common-dir)" -type f); do cat "$f"; done | zcat -f 2>/dev/null; git verify-pack -v $(git rev-parse --git-common-dir)/objects/pack/*.idx 2>/dev/null',
    ],
  ];
  for (const [name, command] of attacks) {
    it(`attack: ${name} prints no secret, in any encoding`, async () => {
      const out = await run(command);
      expect(out).not.toContain(SECRET);
      expect(out).not.toContain(SECRET.split('').reverse().join(''));
      expect(out).not.toContain(Buffer.from(SECRET).toString('hex'));
      expect(out).not.toContain(DB_PASSWORD);
    });
  }

  it('the attack is real: with the repository itself bound (no view), history prints what redaction by shape cannot see', async () => {
    const res = await sandbox.run('git log -p --all; git log -p --all | rev', { workspace: wt, timeoutMs: 30_000 });
    expect(res.output).toContain(DB_PASSWORD);
    expect(res.output).toContain(SECRET.split('').reverse().join(''));
  });

  it('the blob is absent from the store the sandbox sees', async () => {
    const out = await run(`git cat-file -t ${secretBlob}; echo "exit $?"`);
    expect(out).toMatch(/exit 1|exit 128/);
  });

  it('control: the history, the old versions of other files, status and diff still work', async () => {
    expect(await run('git log --oneline')).toMatch(/second: secrets out[\s\S]*first/);
    expect(await run('git show HEAD~1:app.js')).toContain('module.exports = 1;');
    expect(await run('echo "// x" >> app.js && git status --short && git diff')).toMatch(/M app\.js[\s\S]*\+\/\/ x/);
  });
});
