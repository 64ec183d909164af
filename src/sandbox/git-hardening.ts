/**
 * For git that Kiln itself runs on the host (worktrees, diffs, patches, checkpoints). The
 * repository's config and the agent-edited worktree are not trusted: a hook, an fsmonitor, an
 * external diff, a pager or a credential helper named there would run with the worker's rights
 * and secrets. These settings switch each such command hook off and keep git from ever prompting.
 *
 * An empty `-c diff.external=` cannot switch off a configured external diff (git then tries to run
 * "" and dies), so diff/log/show need the per-command flags in HARDENED_DIFF_FLAGS; textconv drivers
 * are chosen by the agent-editable .gitattributes. Use `--no-verify` on commit as well.
 */
const HARDENED_CONFIG: ReadonlyArray<readonly [string, string]> = [
  ['core.hooksPath', '/dev/null'],
  ['core.fsmonitor', 'false'],
  ['core.pager', 'cat'],
  ['core.editor', 'true'],
  ['core.askPass', ''],
  ['core.sshCommand', 'ssh -oBatchMode=yes'],
  ['sequence.editor', 'true'],
  ['credential.helper', ''],
  // ext:: URLs run arbitrary commands; nothing Kiln does needs them.
  ['protocol.ext.allow', 'never'],
  ['color.ui', 'false'],
  // Patch text must not depend on a user's taste: a/ b/ prefixes, no mnemonic prefixes.
  ['diff.noprefix', 'false'],
  ['diff.mnemonicPrefix', 'false'],
  ['commit.gpgSign', 'false'],
  ['tag.gpgSign', 'false'],
];

/** For every git diff/log/show Kiln runs: no external diff program, no textconv filter. */
export const HARDENED_DIFF_FLAGS: readonly string[] = ['--no-ext-diff', '--no-textconv'];

/** `key=value` pairs, e.g. for simple-git's `config` option. */
export function hardenedGitConfig(): string[] {
  return HARDENED_CONFIG.map(([k, v]) => `${k}=${v}`);
}

/** `-c key=value` arguments to put before the git subcommand: `git ${hardenedGitArgs()} diff ...`. */
export function hardenedGitArgs(): string[] {
  return HARDENED_CONFIG.flatMap(([k, v]) => ['-c', `${k}=${v}`]);
}

/**
 * The environment for host git: the given one without any GIT_* variable the worker happened to
 * inherit (GIT_DIR, GIT_WORK_TREE, GIT_INDEX_FILE, GIT_CONFIG_*, GIT_EXTERNAL_DIFF, GIT_SSH_COMMAND...
 * would redirect or extend what git does) and without askpass helpers, plus settings that keep git
 * from reading system config, prompting, paging or taking optional locks.
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
    GIT_TERMINAL_PROMPT: '0',
    GIT_PAGER: 'cat',
    GIT_EDITOR: 'true',
    GIT_SEQUENCE_EDITOR: 'true',
    // `git status` would otherwise refresh the index and race with git inside the sandbox.
    GIT_OPTIONAL_LOCKS: '0',
  };
}
