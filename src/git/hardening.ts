/**
 * For git that Kiln itself runs on the host (worktrees, diffs, patches, checkpoints, file lists).
 * The repository's config and the agent-edited worktree are not trusted: a hook, an fsmonitor, a
 * filter, a textconv or external diff, a pager, an editor or a credential helper named there would
 * run with the worker's rights and secrets. Every such setting is switched off here, git never
 * prompts, and no transport (ssh, ext::, file://...) is allowed: Kiln never fetches or pushes.
 *
 * An empty `-c diff.external=` cannot switch off a configured external diff (git then tries to run
 * "" and dies), so diff/log/show also get HARDENED_DIFF_FLAGS (the runner adds them). Filter, diff
 * and merge drivers are named by the agent-editable .gitattributes and defined in config under
 * names Kiln cannot know in advance: the runner lists the configured ones and blanks each.
 */
const HARDENED_CONFIG: ReadonlyArray<readonly [string, string]> = [
  ['core.hooksPath', '/dev/null'],
  ['core.fsmonitor', 'false'],
  ['core.pager', 'cat'],
  ['core.editor', 'true'],
  ['core.askPass', ''],
  ['core.sshCommand', 'false'],
  ['core.gitProxy', ''],
  ['core.alternateRefsCommand', ''],
  // attributes only name drivers, but the user-wide file is not this run's business
  ['core.attributesFile', '/dev/null'],
  ['sequence.editor', 'true'],
  ['credential.helper', ''],
  ['protocol.allow', 'never'],
  // ext:: URLs run arbitrary commands; per-protocol keys would beat protocol.allow, so name them too.
  ['protocol.ext.allow', 'never'],
  ['protocol.file.allow', 'never'],
  ['submodule.recurse', 'false'],
  // a checked-out submodule is asked whether it is dirty by a `git status` run inside it, which
  // reads that repository's own config (its filters): diff and status compare the commit only
  ['diff.ignoreSubmodules', 'dirty'],
  ['color.ui', 'false'],
  // Patch text must not depend on a user's taste: a/ b/ prefixes, no mnemonic prefixes.
  ['diff.noprefix', 'false'],
  ['diff.mnemonicPrefix', 'false'],
  ['commit.gpgSign', 'false'],
  ['tag.gpgSign', 'false'],
  ['log.showSignature', 'false'],
  ['gpg.program', 'false'],
  // no background gc/maintenance started in the user's repository
  ['gc.auto', '0'],
  ['maintenance.auto', 'false'],
];

/** For every git diff/log/show Kiln runs: no external diff program, no textconv filter. */
export const HARDENED_DIFF_FLAGS: readonly string[] = ['--no-ext-diff', '--no-textconv'];

/** Subcommands that would otherwise run an external diff or a textconv driver. */
export const DIFF_SUBCOMMANDS: ReadonlySet<string> = new Set(['diff', 'log', 'show', 'diff-files', 'diff-index', 'diff-tree']);

/** Config keys that name a program a .gitattributes line can select (filter, diff and merge drivers). */
export const DRIVER_KEYS = '^(filter|diff|merge)\\..+\\.(clean|smudge|process|command|textconv|driver)$';

/** `key=value` pairs. */
export function hardenedGitConfig(): string[] {
  return HARDENED_CONFIG.map(([k, v]) => `${k}=${v}`);
}

/** `-c key=value` arguments to put before the git subcommand: `git ${hardenedGitArgs()} diff ...`. */
export function hardenedGitArgs(): string[] {
  return ['--no-pager', ...HARDENED_CONFIG.flatMap(([k, v]) => ['-c', `${k}=${v}`])];
}

/**
 * Config entries, as GIT_CONFIG_COUNT/KEY_n/VALUE_n variables (command-line precedence, any key
 * spelling, inherited by the git processes git itself starts).
 */
export function configEnv(entries: ReadonlyArray<readonly [string, string]>): Record<string, string> {
  const env: Record<string, string> = { GIT_CONFIG_COUNT: String(entries.length) };
  entries.forEach(([k, v], i) => {
    env[`GIT_CONFIG_KEY_${i}`] = k;
    env[`GIT_CONFIG_VALUE_${i}`] = v;
  });
  return env;
}

/**
 * The environment for host git: the given one without any GIT_* variable the worker happened to
 * inherit (GIT_DIR, GIT_WORK_TREE, GIT_INDEX_FILE, GIT_CONFIG_*, GIT_EXTERNAL_DIFF, GIT_SSH_COMMAND...
 * would redirect or extend what git does) and without askpass helpers, plus settings that keep git
 * from reading system or user config, prompting, paging, using a transport or taking optional locks.
 */
export function gitHardeningEnv(base: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(base)) {
    if (v === undefined) continue;
    if (k.toUpperCase().startsWith('GIT_') || k === 'SSH_ASKPASS' || k === 'SSH_ASKPASS_REQUIRE') continue;
    env[k] = v;
  }
  return {
    ...env,
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_ATTR_NOSYSTEM: '1',
    GIT_TERMINAL_PROMPT: '0',
    GIT_PAGER: 'cat',
    GIT_EDITOR: 'true',
    GIT_SEQUENCE_EDITOR: 'true',
    // a list naming no real protocol: every transport is refused, whatever the config says
    GIT_ALLOW_PROTOCOL: 'none',
    // `git status` would otherwise refresh the index and race with git inside the sandbox.
    GIT_OPTIONAL_LOCKS: '0',
  };
}
