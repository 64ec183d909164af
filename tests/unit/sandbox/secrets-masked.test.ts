/**
 * Secrets read through commands. Each attack runs against the real bwrap next
 * to a control that looks the same but aims at an ordinary file, which must still work.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { chmodSync, existsSync, linkSync, lstatSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createSandbox, type Sandbox } from '../../../src/sandbox/index.js';
import { hostToolchains } from '../../../src/sandbox/toolchains.js';
import { cleanupTempDirs, git, makeRepo, tempDir, uniqueMarker } from './helpers.js';

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await createSandbox({ mode: 'bwrap' });
});
afterAll(cleanupTempDirs);

const run = (command: string, workspace: string, sensitive?: { sensitive: string[]; allowSensitive: string[] }) =>
  sandbox.run(command, { workspace, timeoutMs: 10_000, ...(sensitive ? { sensitive } : {}) });

/** A worktree with a secret in .env, a key and an npmrc, and an ordinary file holding a plain value. */
function worktreeWithSecrets() {
  const ws = tempDir('ws');
  const secret = uniqueMarker('canary');
  const plain = uniqueMarker('plain');
  writeFileSync(join(ws, '.env'), `DB_PASSWORD=${secret}\n`);
  writeFileSync(join(ws, '.env.local'), `API=${secret}\n`);
  mkdirSync(join(ws, 'config'));
  writeFileSync(join(ws, 'config', 'server.key'), `-----BEGIN PRIVATE KEY-----\n${secret}\n`);
  writeFileSync(join(ws, '.npmrc'), `//registry.npmjs.org/:_authToken=${secret}\n`);
  mkdirSync(join(ws, '.aws'));
  writeFileSync(join(ws, '.aws', 'credentials'), `aws_secret_access_key=${secret}\n`);
  writeFileSync(join(ws, '.env.example'), `DB_HOST=${plain}-example\n`);
  writeFileSync(join(ws, 'notes.txt'), `${plain}\n`);
  return { ws, secret, plain };
}

describe('sensitive files in the worktree are masked', () => {
  test('grep -rn finds the plain value and never the secret', async () => {
    const { ws, secret, plain } = worktreeWithSecrets();
    const r = await run(`grep -rn -e '${secret}' -e '${plain}' .`, ws);
    expect(r.output).not.toContain(secret);
    expect(r.output).toContain(`./notes.txt:1:${plain}`);
    // the committed template stays readable: it tells the agent which variables exist
    expect(r.output).toContain(`./.env.example:1:DB_HOST=${plain}-example`);
  });

  test("find -name '.e*' -exec cat reads nothing from .env, and the files are still listed", async () => {
    const { ws, secret } = worktreeWithSecrets();
    const r = await run(`find . -name '.e*' -exec cat {} +; find . -name '.e*' | sort`, ws);
    expect(r.output).not.toContain(secret);
    expect(r.output).toContain('./.env\n');
    expect(r.output).toContain('-example');
  });

  test("an interpreter building the name ('.e'+'nv') reads an empty file; the same code reads notes.txt", async () => {
    const { ws, secret, plain } = worktreeWithSecrets();
    const r = await run(
      `node -e "const fs=require('fs');console.log('env=['+fs.readFileSync('.e'+'nv','utf8')+']');console.log('notes='+fs.readFileSync('no'+'tes.txt','utf8'))"; python3 -c "print('py=['+open('.e'+'nv.local').read()+']')"`,
      ws,
    );
    expect(r.output).not.toContain(secret);
    expect(r.output).toContain('env=[]');
    expect(r.output).toContain(`notes=${plain}`);
    expect(r.output).toContain('py=[]');
  });

  test('keys, .npmrc and whole credential directories (.aws/) are masked too', async () => {
    const { ws, secret } = worktreeWithSecrets();
    const r = await run('cat config/server.key .npmrc .aws/credentials 2>&1; ls -A .aws; echo "ls:$?"', ws);
    expect(r.output).not.toContain(secret);
    expect(r.output).toContain('ls:0');
  });

  test('ln .env notes2.txt fails (another mount); ln notes.txt works', async () => {
    const { ws, secret, plain } = worktreeWithSecrets();
    const r = await run('ln .env stolen.txt; echo "env:$?"; ln notes.txt copy.txt; echo "notes:$?"; cat stolen.txt copy.txt 2>/dev/null', ws);
    expect(r.output).toMatch(/env:[1-9]/);
    expect(r.output).toContain('notes:0');
    expect(r.output).toContain(plain);
    expect(r.output).not.toContain(secret);
    expect(existsSync(join(ws, 'stolen.txt'))).toBe(false);
    expect(lstatSync(join(ws, 'copy.txt')).nlink).toBe(2);
  });

  test('a hard link to .env made before the command (on the host, by setup) is masked too; a hard link between ordinary files is not', async () => {
    const { ws, secret, plain } = worktreeWithSecrets();
    linkSync(join(ws, '.env'), join(ws, 'innocent.txt'));
    linkSync(join(ws, 'notes.txt'), join(ws, 'notes-link.txt'));
    const r = await run('cat innocent.txt notes-link.txt', ws);
    expect(r.output).not.toContain(secret);
    expect(r.output).toContain(plain);
  });

  test('the secret cannot be overwritten, moved or removed from inside; an ordinary file can', async () => {
    const { ws, secret } = worktreeWithSecrets();
    const r = await run('echo x > .env; echo "write:$?"; mv .env moved; echo "mv:$?"; rm -f .env; echo "rm:$?"; echo y > notes.txt; echo "notes:$?"', ws);
    expect(r.output).toMatch(/write:[1-9]/);
    expect(r.output).toMatch(/mv:[1-9]/);
    expect(r.output).toMatch(/rm:[1-9]/);
    expect(r.output).toContain('notes:0');
    expect(readFileSync(join(ws, '.env'), 'utf8')).toContain(secret);
  });

  test("the run's policy is honoured: an extra sensitive glob is masked, an allowSensitive exception is not", async () => {
    const { ws, secret } = worktreeWithSecrets();
    writeFileSync(join(ws, 'deploy.secret.yml'), `token: ${secret}-yml\n`);
    const r = await run('cat deploy.secret.yml .env.local', ws, { sensitive: ['**/*.secret.yml'], allowSensitive: ['.env.local'] });
    expect(r.output).not.toContain(`${secret}-yml`);
    expect(r.output).toContain(`API=${secret}`);
  });
});

describe("the user's main checkout and the host's private files are not visible", () => {
  test("from a worktree under <repo>/.kiln/worktrees, ../../../.env of the main checkout does not exist; the worktree's own files do", async () => {
    const repo = makeRepo();
    const secret = uniqueMarker('main-env');
    writeFileSync(join(repo, '.env'), `TOKEN=${secret}\n`);
    writeFileSync(join(repo, 'untracked-notes.txt'), `${secret}-notes\n`);
    const wt = join(repo, '.kiln', 'worktrees', 'run-1');
    mkdirSync(join(repo, '.kiln', 'worktrees'), { recursive: true });
    git(repo, 'worktree', 'add', '-q', '--detach', wt);
    const r = await run(
      `node -e "try{console.log(require('fs').readFileSync('../../../.e'+'nv','utf8'))}catch(e){console.log(e.code)}"; cat '${repo}/untracked-notes.txt' 2>&1; ls -A ../../..; cat README.md; git log --format=%s -1`,
      wt,
    );
    expect(r.output).not.toContain(secret);
    expect(r.output).toContain('ENOENT');
    // control: the worktree itself and git (reading the main repository's .git, read-only) work
    expect(r.output).toContain('# fixture');
    expect(r.output).toContain('initial');
  });

  test('another repository elsewhere on the host is not visible', async () => {
    const other = makeRepo('/var/tmp');
    writeFileSync(join(other, 'secret.txt'), 'other-repo-content\n');
    const r = await run(`cat '${other}/secret.txt' 2>&1; ls '${other}' 2>&1`, tempDir('ws'));
    expect(r.output).not.toContain('other-repo-content');
    expect(r.output).toContain('No such file');
  });

  test('a host file others may not read (mode 0600 in /etc) reads as empty; a world-readable one beside it is read', async () => {
    if (process.getuid?.() !== 0) return; // only root can plant files in /etc
    const name = uniqueMarker('etc');
    const priv = `/etc/${name}-private`;
    const pub = `/etc/${name}-public`;
    writeFileSync(priv, `${name}-private-value\n`, { mode: 0o600 });
    writeFileSync(pub, `${name}-public-value\n`, { mode: 0o644 });
    chmodSync(priv, 0o600);
    try {
      const r = await run(`cat ${priv} ${pub}; cat /etc/shadow; echo "shadow:$(wc -c < /etc/shadow)"`, tempDir('ws'));
      expect(r.output).not.toContain(`${name}-private-value`);
      expect(r.output).toContain(`${name}-public-value`);
      expect(r.output).toContain('shadow:0');
    } finally {
      rmSync(priv, { force: true });
      rmSync(pub, { force: true });
    }
  });

  test('only the allowlisted system directories exist at the root', async () => {
    const r = await run('ls -A /; echo "var: $(ls -A /var)"', tempDir('ws'));
    const names = r.output.split('\n').filter(Boolean);
    // a host toolchain under a hidden folder (pyenv, rustup) is bound read-only: its folder shows, and nothing beside it
    const bound = hostToolchains().binds;
    for (const hidden of ['root', 'home', 'run', 'srv', 'mnt', 'work', 'boot']) {
      const inside = [...new Set(bound.filter((b) => b.startsWith(`/${hidden}/`)).map((b) => b.split('/')[2]!))].sort();
      if (!inside.length) {
        expect(names).not.toContain(hidden);
        continue;
      }
      const listed = (await run(`ls -A /${hidden}`, tempDir('ws'))).output.split('\n').filter(Boolean).sort();
      expect(listed).toEqual(inside);
    }
    for (const seen of ['usr', 'etc', 'bin', 'tmp', 'proc', 'dev']) expect(names).toContain(seen);
    // /var holds only the link to the private /tmp
    expect(r.output).toContain('var: tmp\n');
  });
});

describe("git's config inside carries no credentials", () => {
  test('git var -l, cat .git/config and git remote -v show the remote without its token; git still works', async () => {
    const repo = makeRepo();
    const token = `ghp_${uniqueMarker('tok').replace(/_/g, '')}`;
    git(repo, 'remote', 'add', 'origin', `https://kiln-bot:${token}@github.com/acme/app.git`);
    git(repo, 'config', 'http.https://github.com/.extraheader', `AUTHORIZATION: basic ${token}-header`);
    const wt = join(repo, '.kiln', 'worktrees', 'run-git');
    mkdirSync(join(repo, '.kiln', 'worktrees'), { recursive: true });
    git(repo, 'worktree', 'add', '-q', '--detach', wt);
    const r = await run(`git var -l 2>&1; cat '${repo}/.git/config'; git remote -v; git log --format=%s -1`, wt);
    expect(r.output).not.toContain(token);
    // control: the remote is still named, and git reads the repository
    expect(r.output).toContain('https://github.com/acme/app.git');
    expect(r.output).toContain('initial');
    // the host's config is untouched
    expect(readFileSync(join(repo, '.git', 'config'), 'utf8')).toContain(token);
  });
});
