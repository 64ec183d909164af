import { readdirSync } from 'node:fs';
import { join } from 'node:path';

/** The per-command and per-server cgroups this process made (sandbox/cgroup.ts names them kiln-PID-…) that still exist. */
export function ownCgroups(): string[] {
  const roots = ['/sys/fs/cgroup/pids', '/sys/fs/cgroup/memory', '/sys/fs/cgroup/unified', '/sys/fs/cgroup'];
  return roots.flatMap((r) => {
    try {
      return readdirSync(r)
        .filter((d) => d.startsWith(`kiln-${process.pid}-`))
        .map((d) => join(r, d));
    } catch {
      return [];
    }
  });
}
