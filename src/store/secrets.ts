/**
 * The run's known secrets, gathered on the host at prepare time and again by the first activity
 * of a run that a restarted worker serves: the values in the repo's sensitive files (the user's
 * checkout, where an untracked .env lives, and the worktree). They go only into this process's
 * redaction registry — never into workflow history, run records or logs.
 */
import { lstat, readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import type { PolicyConfig } from '../policy/config.js';
import { isSensitivePath } from '../policy/globs.js';
import { KNOWN_VALUE_MIN_CHARS, registerKnownSecrets, valuesInSecretFile } from '../redact/index.js';

/** Bounds on the scan: a repo's secrets sit near its root, and a huge tree must not stall prepare. */
const MAX_DEPTH = 6;
const MAX_ENTRIES = 20_000;
const MAX_FILE_BYTES = 256 * 1024;
const SKIP_DIRS = new Set(['.git', '.kiln', 'node_modules', '.venv', 'venv', '__pycache__', 'target', 'dist', 'build']);

const scanned = new Set<string>();

/**
 * Scans each root once per process (`again`: once more, after setup may have written files);
 * returns how many sensitive files gave values.
 */
export async function registerRunSecrets(roots: string[], policy?: Pick<PolicyConfig, 'sensitive'>, again = false): Promise<number> {
  let files = 0;
  for (const root of roots) {
    if (scanned.has(root) && !again) continue;
    scanned.add(root);
    files += await scan(root, policy?.sensitive ?? []);
  }
  return files;
}

/** Credentials in the repo's git remotes (`git var -l` prints them): `https://TOKEN@host/…`. */
export function urlCredentials(gitConfig: string): string[] {
  const out: string[] = [];
  for (const m of gitConfig.matchAll(/^\s*(?:url|pushurl)\s*=\s*[a-z][\w+.-]*:\/\/([^@\s/]+)@/gim)) {
    // user:secret → the secret; a lone user-info is the token itself (GitHub's https://TOKEN@…)
    const info = m[1]!;
    const v = decodeURIComponent(info.includes(':') ? info.slice(info.indexOf(':') + 1) : info);
    if (v.length >= KNOWN_VALUE_MIN_CHARS) out.push(v);
  }
  return out;
}

async function scan(root: string, sensitive: string[]): Promise<number> {
  let entries = 0;
  let files = 0;
  const gitConfig = await readFile(join(root, '.git', 'config'), 'utf8').catch(() => '');
  const remote = urlCredentials(gitConfig);
  if (remote.length) {
    registerKnownSecrets(remote);
    files++;
  }
  const walk = async (dir: string, depth: number): Promise<void> => {
    if (depth > MAX_DEPTH || entries > MAX_ENTRIES) return;
    const list = await readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const d of list) {
      if (++entries > MAX_ENTRIES) return;
      const full = join(dir, d.name);
      // symlinks are not followed: a repo's link must not make the host read files outside it
      if (d.isDirectory()) {
        if (!SKIP_DIRS.has(d.name)) await walk(full, depth + 1);
      } else if (d.isFile() && isSensitivePath(relative(root, full), { sensitive, allowSensitive: [] })) {
        const st = await lstat(full).catch(() => undefined);
        if (!st || st.size > MAX_FILE_BYTES) continue;
        const text = await readFile(full, 'utf8').catch(() => '');
        const values = valuesInSecretFile(text);
        if (values.length) {
          registerKnownSecrets(values);
          files++;
        }
      }
    }
  };
  await walk(root, 0);
  return files;
}
