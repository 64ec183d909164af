/**
 * Where a run on a repo reads and writes besides the directory it was named by: git's own
 * directory and the common one (a `.git` file or symlink may lead anywhere; worktree entries are
 * written into the common one), the object stores it borrows (alternates: their history is the
 * repo's history), and `.kiln`, where worktrees and run files go. KILN_REPO_ROOTS is checked
 * against each (policy/run-request.ts).
 */
import { readFileSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import { gitResult } from '../git/run.js';
import type { RepoPlace } from '../policy/run-request.js';

// git itself follows alternates five deep
const MAX_ALTERNATES_DEPTH = 5;

function alternates(objectsDir: string): string[] {
  let text: string;
  try {
    text = readFileSync(join(objectsDir, 'info', 'alternates'), 'utf8');
  } catch {
    return [];
  }
  return text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
    .map((l) => (isAbsolute(l) ? l : resolve(objectsDir, l)));
}

export async function repoPlaces(repo: string): Promise<RepoPlace[]> {
  const places: RepoPlace[] = [
    { what: 'repo', path: repo },
    { what: 'run directory', path: join(repo, '.kiln') },
  ];
  const r = await gitResult(repo, ['rev-parse', '--path-format=absolute', '--git-dir', '--git-common-dir']).catch(() => undefined);
  const [gitDir, common] = r?.exitCode === 0 ? r.stdout.trim().split('\n') : [];
  // not a repository: the run fails on that, later, with its own message
  if (!gitDir || !common) return places;
  places.push({ what: 'git directory', path: gitDir }, { what: 'common git directory', path: common });
  let frontier = [join(common, 'objects')];
  const seen = new Set(frontier);
  for (let depth = 0; depth < MAX_ALTERNATES_DEPTH && frontier.length; depth++) {
    const next: string[] = [];
    for (const dir of frontier)
      for (const alt of alternates(dir)) {
        if (seen.has(alt)) continue;
        seen.add(alt);
        places.push({ what: 'borrowed object store (alternates)', path: alt });
        next.push(alt);
      }
    frontier = next;
  }
  return places;
}
