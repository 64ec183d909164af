/**
 * Hooks only the tests turn on, kept out of the modules they reach into: production code calls
 * the function here and does nothing more, and the variables that arm them are read here alone.
 *
 * Crash points: `KILN_TEST_CRASH_AT=after-edit-write,model-turn@3` makes the worker kill itself
 * (SIGKILL, no cleanup) the first time it reaches that point, so tests can prove a real crash at
 * a precise moment changes nothing. Each point fires once per marker directory.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { settingsFrom } from './settings.js';

/**
 * `verify`: as verification starts; `verify-checks`: with its pristine checkout made, before the
 * checks run; `current-tree`: as the worktree's tree is compared with the verified one;
 * `baseline`: as the baseline beside the turns starts; `finalize`: as the run's artifacts are
 * written at its end. An
 * in-process test may pass a function of its own as the deps' `crash` to act at these points
 * (fill a disk) instead of killing the worker.
 */
export type CrashPoint =
  | 'model-turn'
  | 'command-running'
  | 'command-finished'
  | 'after-edit-write'
  | 'approval-requested'
  | 'verify'
  | 'verify-checks'
  | 'current-tree'
  | 'baseline'
  | 'finalize';

export function crashPointsFromEnv(env: NodeJS.ProcessEnv = process.env): (point: CrashPoint, key?: string | number) => void {
  const s = settingsFrom(env);
  if (s.testCrashAt.length === 0) return () => {};
  const wanted = new Set(s.testCrashAt);
  const markers = s.testCrashMarkers ?? join(process.cwd(), '.kiln-crash-markers');
  return (point, key) => {
    const name = key === undefined ? point : `${point}@${key}`;
    if (!wanted.has(name) && !wanted.has(point)) return;
    const marker = join(markers, name.replace(/[^\w@-]/g, '_'));
    if (existsSync(marker)) return;
    mkdirSync(markers, { recursive: true });
    writeFileSync(marker, String(process.pid));
    process.stderr.write(`kiln: test crash point ${name} reached, killing worker ${process.pid}\n`);
    process.kill(process.pid, 'SIGKILL');
  };
}
