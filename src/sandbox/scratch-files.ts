import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

let dir: string | undefined;
const files = new Map<string, string>();

/**
 * A read-only host file the sandbox binds in (the empty file over masked secrets, slirp's
 * resolv.conf, the seccomp program), written once per worker process in a private directory.
 */
export function scratchFile(name: string, content: string | Buffer): string {
  const known = files.get(name);
  if (known) return known;
  dir ??= mkdtempSync(join(tmpdir(), 'kiln-sandbox-'));
  const path = join(dir, name);
  writeFileSync(path, content, { mode: 0o444 });
  files.set(name, path);
  return path;
}

/** Bound over each masked file: it reads as empty, and as a bind mount it cannot be written, renamed or hard-linked. */
export function emptyFile(): string {
  return scratchFile('empty', '');
}
