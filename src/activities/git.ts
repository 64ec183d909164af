/**
 * Git that Kiln runs on the host. The repository's own config must not run code here: no hooks,
 * no fsmonitor, no pager, no external diff, no credential helper.
 */
import { simpleGit, type SimpleGit } from 'simple-git';

const HARDENING = [
  'core.hooksPath=/dev/null',
  'core.fsmonitor=false',
  'core.pager=cat',
  'diff.external=',
  'credential.helper=',
  'core.sshCommand=false',
];

export function git(dir: string, env: NodeJS.ProcessEnv = process.env, indexFile?: string): SimpleGit {
  // simple-git refuses to set these keys at all unless told; we set them only to neutralise them.
  const unsafe = {
    allowUnsafeHooksPath: true,
    allowUnsafeFsMonitor: true,
    allowUnsafePager: true,
    allowUnsafeDiffExternal: true,
    allowUnsafeCredentialHelper: true,
    allowUnsafeSshCommand: true,
    allowUnsafeAskPass: true,
  };
  return simpleGit({ baseDir: dir, config: HARDENING, unsafe, allowEnvironment: ['GIT_CONFIG_NOSYSTEM', 'GIT_TERMINAL_PROMPT', 'GIT_PAGER', 'GIT_ASKPASS', 'GIT_INDEX_FILE'] } as never)
    .env({
      PATH: env.PATH ?? '/usr/bin:/bin',
      HOME: env.HOME ?? '/tmp',
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_TERMINAL_PROMPT: '0',
      GIT_PAGER: 'cat',
      GIT_ASKPASS: '',
      LANG: 'C',
      ...(indexFile ? { GIT_INDEX_FILE: indexFile } : {}),
    });
}
