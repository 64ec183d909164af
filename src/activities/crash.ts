/**
 * Test-only crash points. `KILN_TEST_CRASH_AT=after-edit-write,model-turn@3` makes the worker
 * kill itself (SIGKILL, no cleanup) the first time it reaches that point, so tests can prove a
 * real crash at a precise moment changes nothing. Each point fires once per marker directory.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export type CrashPoint = 'model-turn' | 'command-running' | 'after-edit-write' | 'approval-requested' | 'verify';

export function crashPointsFromEnv(env: NodeJS.ProcessEnv = process.env): (point: CrashPoint, key?: string | number) => void {
  const spec = env.KILN_TEST_CRASH_AT;
  if (!spec) return () => {};
  const wanted = new Set(
    spec
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  );
  const markers = env.KILN_TEST_CRASH_MARKERS ?? join(process.cwd(), '.kiln-crash-markers');
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
