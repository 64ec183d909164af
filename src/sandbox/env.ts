import { dirname } from 'node:path';
import { cacheEnv, hostToolchains, type Toolchains } from './toolchains.js';

/** HOME inside the sandbox: on the private /tmp, empty at every run, gone afterwards. */
export const SANDBOX_HOME = '/tmp/home';

const BASE_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/**
 * The environment a command gets is built from nothing: an allowlist of harmless variables, never
 * the worker's own environment, which holds API keys and tokens (ANTHROPIC_API_KEY, GITHUB_TOKEN...).
 */
export function commandEnv(
  extra: Record<string, string> | undefined,
  home: string,
  parent: NodeJS.ProcessEnv = process.env,
  /** where the command's warm caches are (as the command sees the path), if it has any */
  cacheRoot?: string,
  toolchains: Toolchains = hostToolchains(),
): Record<string, string> {
  const nodeBin = dirname(process.execPath);
  const base = BASE_PATH.split(':').includes(nodeBin) ? BASE_PATH : `${nodeBin}:${BASE_PATH}`;
  // host toolchains first, as on the host's PATH (pyenv's python3 over /usr/bin's); they are read-only host folders
  const path = [...toolchains.path.filter((d) => !base.split(':').includes(d)), base].join(':');
  const env: Record<string, string> = {
    PATH: path,
    HOME: home,
    LANG: 'C.UTF-8',
    LC_ALL: 'C.UTF-8',
    TERM: 'dumb',
    CI: '1',
    TZ: parent.TZ ?? 'UTC',
    // Tools that honour these stop paging, prompting, colouring and phoning home.
    NO_COLOR: '1',
    PAGER: 'cat',
    GIT_PAGER: 'cat',
    GIT_TERMINAL_PROMPT: '0',
    npm_config_update_notifier: 'false',
    // Test runs leave no bytecode or cache dirs in the worktree, where they would end up in the patch.
    PYTHONDONTWRITEBYTECODE: '1',
    PYTEST_ADDOPTS: '-p no:cacheprovider',
    ...toolchains.env,
    ...(cacheRoot ? cacheEnv(cacheRoot) : {}),
  };
  return { ...env, ...(extra ?? {}) };
}
