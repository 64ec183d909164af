import type { Word } from '../shell/parse.js';
import type { ProgramJudge, ProgramResult } from './program-parts.js';
import { readFileSync } from 'node:fs';
import { diffTargets, positionals } from './program-parts.js';
import { allow, ask, deny, type Verdict } from './verdict.js';

const READONLY = new Set([
  'status',
  'diff',
  'log',
  'show',
  'blame',
  'ls-files',
  'rev-parse',
  'describe',
  'shortlog',
  'grep',
  'ls-tree',
  'cat-file',
  'rev-list',
  'merge-base',
  'show-ref',
  'whatchanged',
  'name-rev',
  'check-ignore',
  'count-objects',
  'annotate',
  'range-diff',
  'help',
  'version',
  'var',
  'diff-tree',
  'diff-files',
  'diff-index',
  'for-each-ref',
  'cherry',
  'show-branch',
  'check-attr',
  'verify-commit',
  'fsck',
]);
const LOCAL_WRITE = new Set([
  'add',
  'commit',
  'checkout',
  'restore',
  'switch',
  'mv',
  'rm',
  'reset',
  'apply',
  'am',
  'cherry-pick',
  'merge',
  'rebase',
  'revert',
  'stash',
  'notes',
  'init',
  'bisect',
  'format-patch',
  'branch',
  'tag',
  'mergetool',
  'rerere',
  'sparse-checkout',
]);
const NETWORK = new Set([
  'pull',
  'fetch',
  'clone',
  'ls-remote',
  'submodule',
  'request-pull',
  'send-email',
  'daemon',
  'instaweb',
  'http-backend',
  'svn',
  'p4',
  'archive',
]);
const HISTORY = new Set(['filter-branch', 'filter-repo', 'update-ref', 'replace', 'gc', 'prune', 'repack', 'reflog', 'worktree', 'hook', 'maintenance', 'lfs']);

const v = (verdict: Verdict, extra: Verdict[] = []): ProgramResult => ({ ...verdict, extra });

/** git: read-only subcommands allowed, local changes allowed, anything touching remotes or config denied. */
export function judgeGit(args: Word[], j: ProgramJudge): ProgramResult {
  const extra: Verdict[] = [];
  let i = 0;
  for (; i < args.length; i++) {
    const a = args[i]!.value;
    if (a === '-c' || (a.startsWith('-c') && a.length > 2) || a.startsWith('--config-env')) {
      return v(deny('command.git-config', 'git -c changes git configuration for the command (it can run programs); Kiln never changes git config.'));
    }
    if (a === '-C') {
      const dir = args[++i];
      if (dir) {
        const cd = j.cd(dir);
        if (cd.decision !== 'allow') return v(ask('command.outside-path', `git -C ${dir.value} works on a directory outside the repository.`));
      }
      continue;
    }
    if (a.startsWith('--git-dir') || a.startsWith('--work-tree') || a.startsWith('--exec-path=') || a === '--namespace') {
      return v(ask('command.git-dir', `git ${a} points git at another repository; a person must approve it.`));
    }
    if (a === '--version' || a === '--help') return v(allow('command.readonly', 'git --version only reads.', true));
    if (a.startsWith('-')) continue;
    break;
  }
  const sub = args[i]?.value;
  const rest = args.slice(i + 1);
  if (!sub) return v(allow('command.readonly', 'git without a subcommand prints help.', true));
  if (sub === 'push' || sub === 'remote') return v(deny('command.git-remote', `git ${sub} changes or talks to remotes; Kiln leaves a patch and never pushes.`));
  if (sub === 'config') return v(deny('command.git-config', 'git config can make git run programs; Kiln never changes git config.'));
  if (sub === 'clean') return v(deny('command.git-clean', 'git clean deletes untracked files wholesale; delete specific files with rm instead.'));
  if (sub.startsWith('credential')) return v(deny('command.git-credentials', 'git credential reads stored credentials.'));
  if (NETWORK.has(sub) && !(sub === 'archive' && !rest.some((r) => r.value.startsWith('--remote')))) {
    return v(deny('command.network', `git ${sub} uses the network, which the sandbox does not have.`));
  }
  extra.push(...j.sensitiveArgs(rest));
  const outputs = rest.filter((r) => r.value.startsWith('--output=')).map((r) => ({ ...r, value: r.value.slice('--output='.length) }));
  extra.push(...j.writePaths(outputs));
  if (READONLY.has(sub)) return v(allow('command.readonly', `git ${sub} only reads.`, true), extra);
  const listOnly = () =>
    rest.every((r) =>
      /^(-a|-r|-l|--list|-v|-vv|--all|--remotes|--show-current|--contains|--merged|--no-merged|--sort=.*|--format=.*|--points-at|-n\d*)$/.test(r.value),
    );
  if ((sub === 'branch' || sub === 'tag') && listOnly()) return v(allow('command.readonly', `git ${sub} only lists.`, true), extra);
  if (sub === 'stash' && (rest[0]?.value === 'list' || rest[0]?.value === 'show'))
    return v(allow('command.readonly', 'git stash list only reads.', true), extra);
  if (sub === 'reset' && rest.some((r) => r.value === '--hard' || r.value === '--merge' || r.value === '--keep')) {
    return v(ask('command.git-discard', 'git reset --hard throws away uncommitted work; a person must approve it.', 'run_command:git reset --hard'), extra);
  }
  if ((sub === 'rebase' && rest.some((r) => r.value === '-i' || r.value === '--interactive')) || sub === 'mergetool') {
    return v(ask('command.interactive', `git ${sub} -i needs an editor; it would hang.`), extra);
  }
  if (sub === 'rm' || sub === 'mv') extra.push(...j.writePaths(positionals(rest)));
  // apply writes the files its patch names (git strips one leading part unless told -pN)
  if (sub === 'apply' && !rest.some((r) => r.value === '--check' || r.value === '--stat' || r.value === '--numstat' || r.value === '--summary')) {
    const strip = Number(rest.map((r) => /^-p(\d+)$/.exec(r.value)?.[1]).find((x) => x !== undefined) ?? 1);
    for (const f of positionals(rest, ['--directory', '--exclude', '--include', '-C'])) {
      const abs = j.pathOf(f);
      let diff: string | undefined;
      try {
        diff = abs === null ? undefined : readFileSync(abs, 'utf8');
      } catch {
        diff = undefined;
      }
      if (diff === undefined)
        extra.push(ask('command.dynamic-path', `git apply ${f.value}: Kiln cannot read the patch to see which files it writes; a person must check it.`));
      else extra.push(...j.writePaths(diffTargets(diff, strip).map((p) => ({ raw: p, value: p, dynamic: false, glob: false, tilde: false }))));
    }
  }
  // checkout <tree> -- paths, restore [--source x] paths: the paths are rewritten from history
  if (sub === 'checkout' || sub === 'restore') {
    const dashes = rest.findIndex((r) => r.value === '--');
    const paths = dashes >= 0 ? rest.slice(dashes + 1) : sub === 'restore' ? positionals(rest, ['-s', '--source']) : [];
    extra.push(...j.writePaths(paths.filter((p) => !p.value.startsWith('--source='))));
  }
  if (LOCAL_WRITE.has(sub)) return v(allow('command.git-write', `git ${sub} only changes the local repository.`), extra);
  if (HISTORY.has(sub))
    return v(
      ask('command.git-history', `git ${sub} rewrites or reaches outside the repository's normal state; a person must approve it.`, `run_command:git ${sub}`),
      extra,
    );
  return v(ask('command.unknown', `git ${sub} is not a git subcommand Kiln knows to be safe.`, `run_command:git ${sub}`), extra);
}
