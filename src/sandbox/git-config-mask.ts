import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { scratchFile } from './scratch-files.js';

/** `scheme://user:secret@host` → `scheme://host`: the remote stays usable for display, not for pushing. */
const URL_USERINFO = /\b([a-z][a-z0-9+.-]*:\/\/)[^/\s@]+@/gi;
/** `http.<url>.extraheader = AUTHORIZATION: basic …` (actions/checkout), and keys named for secrets */
const SECRET_KEY = /^\s*(extraheader|password|token|oauthtoken|accesstoken)\s*=.*$/gim;

/**
 * The repository's git config as commands see it. The sandbox must bind the git directory (git
 * inside needs it), but its `config` can carry a remote URL with a token or an auth header:
 * `git var -l` or `cat .git/config` printed one. When it does, a copy without them is bound over
 * it; a config without credentials is left as it is.
 */
export function sanitizedGitConfig(file: string): string | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
  const clean = sanitizeGitConfigText(text);
  if (clean === text) return undefined;
  return scratchFile(`gitconfig-${createHash('sha256').update(clean).digest('hex').slice(0, 16)}`, clean);
}

export function sanitizeGitConfigText(text: string): string {
  return text.replace(URL_USERINFO, '$1').replace(SECRET_KEY, '');
}
