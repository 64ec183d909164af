/**
 * Git that Kiln runs on the host through simple-git, with the repository's own config
 * neutralised (no hooks, fsmonitor, pager, external diff or credential helper).
 */
import { simpleGit, type SimpleGit } from 'simple-git';
import { gitHardeningEnv, hardenedGitConfig } from '../sandbox/git-hardening.js';

// simple-git refuses to set these keys at all unless told; Kiln sets them only to switch them off.
const UNSAFE_OK = {
  allowUnsafeHooksPath: true,
  allowUnsafeFsMonitor: true,
  allowUnsafePager: true,
  allowUnsafeEditor: true,
  allowUnsafeAskPass: true,
  allowUnsafeSshCommand: true,
  allowUnsafeCredentialHelper: true,
  allowUnsafeProtocolOverride: true,
  allowUnsafeGpgProgram: true,
};

export function git(dir: string, env: NodeJS.ProcessEnv = process.env, indexFile?: string): SimpleGit {
  // only what git needs: the worker's own environment (editors, pagers, GIT_*) stays out
  const base = { PATH: env.PATH ?? '/usr/bin:/bin', HOME: env.HOME ?? '/tmp', ...(env.TMPDIR ? { TMPDIR: env.TMPDIR } : {}) };
  const vars = { ...gitHardeningEnv(base), LANG: 'C', ...(indexFile ? { GIT_INDEX_FILE: indexFile } : {}) };
  return simpleGit({
    baseDir: dir,
    config: hardenedGitConfig(),
    unsafe: UNSAFE_OK,
    allowEnvironment: Object.keys(vars).filter((k) => k.startsWith('GIT_')),
  } as never).env(vars);
}
