/**
 * A repository whose own config tries every way git has to run a program: hooks, an fsmonitor
 * (named in an included file), an external diff, a diff driver command, a textconv, clean/smudge
 * and process filters (chosen by the committed .gitattributes), a pager, an editor, gpg, an ssh
 * command and the ext:: transport. Each program, if run, leaves `<name>.ran` in `traps`.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { git, repoWith } from './repo.js';

export interface HostileRepo {
  repo: string;
  traps: string;
  /** path of the trap program with this name (it writes `<name>.ran` and passes stdin through) */
  trap(name: string): string;
  /** the traps that ran, sorted */
  ran(): string[];
  forget(): void;
}

const PASS_THROUGH = new Set(['clean', 'smudge', 'process', 'textconv']);

export const HOOKS = ['post-checkout', 'post-index-change', 'reference-transaction', 'pre-commit', 'post-commit', 'pre-auto-gc'];

export function hostileRepo(prefix = 'kiln-hostile-'): HostileRepo {
  const traps = mkdtempSync(join(tmpdir(), 'kiln-traps-'));
  const trap = (name: string) => {
    const script = join(traps, `${name}.sh`);
    if (!existsSync(script)) {
      // a filter or textconv must still pass content through (textconv gets a file argument);
      // the others must not wait on a stdin that git keeps open (ssh, ext::)
      const body = PASS_THROUGH.has(name) ? 'if [ -f "$1" ]; then cat "$1"; else cat; fi' : 'exit 0';
      writeFileSync(script, `#!/bin/sh\ntouch '${join(traps, `${name}.ran`)}'\n${body}\n`);
      chmodSync(script, 0o755);
    }
    return script;
  };
  const repo = repoWith(
    {
      'a.txt': 'one\n',
      'b.md': 'one\n',
      'c.dat': 'one\n',
      '.gitattributes': '*.txt filter=trap diff=cmd\n*.md filter=proc diff=conv\n',
    },
    prefix,
  );
  // a second commit that changes b.md, for log -p / show to render through the textconv
  writeFileSync(join(repo, 'b.md'), 'two\n');
  git(repo, 'commit', '-qam', 'second');

  for (const hook of HOOKS) {
    writeFileSync(join(repo, '.git', 'hooks', hook), `#!/bin/sh\ntouch '${join(traps, `hook-${hook}.ran`)}'\n`);
    chmodSync(join(repo, '.git', 'hooks', hook), 0o755);
  }
  const included = join(traps, 'included.config');
  writeFileSync(included, `[core]\n\tfsmonitor = ${trap('fsmonitor')}\n`);
  const set = (k: string, v: string) => git(repo, 'config', k, v);
  set('include.path', included);
  set('diff.external', trap('extdiff'));
  set('diff.cmd.command', trap('diffcmd'));
  set('diff.conv.textconv', trap('textconv'));
  set('filter.trap.clean', trap('clean'));
  set('filter.trap.smudge', trap('smudge'));
  set('filter.proc.process', trap('process'));
  set('core.pager', trap('pager'));
  set('core.editor', trap('editor'));
  set('commit.gpgSign', 'true');
  set('gpg.program', trap('gpg'));
  set('core.sshCommand', trap('ssh'));
  set('protocol.ext.allow', 'always');
  set('credential.helper', `!${trap('credential')}`);

  // worktree changes for add/diff/status to look at
  writeFileSync(join(repo, 'a.txt'), 'changed\n');
  writeFileSync(join(repo, 'b.md'), 'changed\n');
  writeFileSync(join(repo, 'c.dat'), 'changed\n');
  const ran = () =>
    readdirSync(traps)
      .filter((f) => f.endsWith('.ran'))
      .map((f) => f.slice(0, -4))
      .sort();
  const forget = () => {
    for (const f of readdirSync(traps)) if (f.endsWith('.ran')) rmSync(join(traps, f));
  };
  forget(); // setup (git commit before the config) ran nothing, but be sure
  return { repo, traps, trap, ran, forget };
}

/** git as a user (or Kiln before the runner) would run it: the config applies, no hardening. */
export function plainGit(repo: string, args: string[], env: NodeJS.ProcessEnv = {}): { status: number | null; stdout: string; stderr: string } {
  const base = { ...process.env };
  for (const k of ['GIT_EDITOR', 'VISUAL', 'EDITOR', 'GIT_PAGER', 'PAGER']) delete base[k];
  const res = spawnSync('git', args, {
    cwd: repo,
    env: { ...base, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t', ...env },
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 30_000,
  });
  return { status: res.status, stdout: res.stdout, stderr: res.stderr };
}
