/**
 * The on-disk record of a run, under <repo>/.kiln/runs/<run>/. Activities keep what must survive a
 * crash here (the conversation, the tool journal) and write the artifacts people read.
 */
import { mkdir, open, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { mkdirSync, renameSync, rmSync, statSync, writeFileSync, type Stats } from 'node:fs';
import { dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { redact } from '../redact/index.js';
import { artifactsDir } from '../shared/paths.js';
import { registerRunSecrets } from './secrets.js';
import { appendKept } from './kept-appends.js';
import { readRunText, SYNC_IO_MAX_BYTES } from './sync-io.js';
import type { ApprovalMode, LogLine, RunInput } from '../shared/types.js';
import type { PolicyConfig } from '../policy/config.js';
import { deepFreeze } from '../shared/freeze.js';
import { KilnInputError } from '../shared/errors.js';

export interface RunRecord {
  input: RunInput;
  worktree: string;
  baseCommit: string;
  checks: string[];
  hostQueue: string;
  createdAt: string;
  /** targets of the paths `.kiln/config` links into the worktree: readable by commands */
  linked?: string[];
  /** the effective policy and approval mode (user over repo, see policy/precedence.ts), fixed at prepare */
  policy?: PolicyConfig;
  mode?: ApprovalMode;
  /** tool clutter left out of the patch and the changed files (absent in older runs: the defaults) */
  exclude?: string[];
  /** the effective setup commands, fixed at prepare (absent in older runs: the input's) */
  setup?: string[];
  /** `.kiln/config` include and link as this run honours them (only a trusted repo's), fixed at prepare */
  brought?: { include: string[]; link: string[] };
  /** worktree paths every command sees read-only (protected-mounts.ts), fixed at prepare (absent in older runs: computed) */
  protectedPaths?: string[];
  /** the repository as commands read it (git-view.ts), fixed at prepare (absent in older runs: the real one, as before) */
  gitView?: { dir: string; gitFile: string } | 'none';
}

export function runDir(repo: string, runId: string): string {
  return artifactsDir(repo, runId);
}

/** Internal state that is not an artifact: the conversation, calls and the tool journal. */
export function stateDir(repo: string, runId: string): string {
  return join(runDir(repo, runId), 'state');
}

export async function readJson<T>(path: string): Promise<T | undefined> {
  try {
    return JSON.parse(await readRunText(path)) as T;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/**
 * Files rewritten whole every turn (the conversation, the run record) as this process last read
 * or wrote them, each with the identity of the file it came from: while a stat finds the same
 * file, the value is reused instead of read and parsed again (the conversation grows with every
 * turn). Another process's write, a rename or a delete shows up in the stat.
 */
const kept = new Map<string, { ino: number; size: number; mtimeMs: number; value: unknown }>();
const MAX_KEPT = 256;

function keep(path: string, st: Stats, value: unknown): void {
  // a shared value that a caller changed would differ from its file
  deepFreeze(value);
  kept.delete(path);
  kept.set(path, { ino: st.ino, size: st.size, mtimeMs: st.mtimeMs, value });
  if (kept.size > MAX_KEPT) kept.delete(kept.keys().next().value!);
}

/** readJson through the kept values. The value is shared and frozen. */
export async function readJsonKept<T>(path: string): Promise<T | undefined> {
  let st: Stats;
  try {
    // a stat reads no file data: synchronous at any size
    st = statSync(path);
  } catch (err) {
    kept.delete(path);
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  const k = kept.get(path);
  if (k && k.ino === st.ino && k.size === st.size && k.mtimeMs === st.mtimeMs) return k.value as T;
  // a write between the stat and the read only makes the next stat miss
  let value: T;
  try {
    value = JSON.parse(await readRunText(path, st.size)) as T;
  } catch (err) {
    kept.delete(path);
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  keep(path, st, value);
  return value;
}

/** The JSON of a file people read (indented), or of one only Kiln reads and rewrites every turn. */
function jsonText(value: unknown, pretty: boolean): string {
  return pretty ? JSON.stringify(value, null, 2) + '\n' : JSON.stringify(value);
}

/** writeTextAtomic of `value`'s JSON, kept for readJsonKept (which freezes it). */
export async function writeJsonKept(path: string, value: unknown, o: { pretty?: boolean } = {}): Promise<void> {
  kept.delete(path);
  await writeTextAtomic(path, jsonText(value, o.pretty ?? false));
  keep(path, statSync(path), value);
}

/** Write then rename, so a crash never leaves half a file that a retry would trust. */
export async function writeJsonAtomic(path: string, value: unknown): Promise<void> {
  await writeTextAtomic(path, jsonText(value, true));
}

/**
 * `write` into `path`'s directory, made first only when missing: a run writes ~10 files a turn
 * into directories that exist, and a mkdir for each was a trip through the thread pool.
 */
async function inDir(path: string, write: () => Promise<void>): Promise<void> {
  try {
    await write();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    await mkdir(dirname(path), { recursive: true });
    await write();
  }
}

async function removeQuietly(path: string, sync: boolean): Promise<void> {
  try {
    if (sync) rmSync(path, { force: true });
    else await rm(path, { force: true });
  } catch {
    // the write's own error is the one to report
  }
}

/** inDir for a synchronous write. */
function inDirSync(path: string, write: () => void): void {
  try {
    write();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    mkdirSync(dirname(path), { recursive: true });
    write();
  }
}

/**
 * writeJsonAtomic that survives the machine, not only the process: the file is flushed before the
 * rename and the directory after it. For journal lines a retry acts on (a command that must not
 * run twice); each costs a disk flush, so not for files rewritten every turn.
 */
export async function writeJsonDurable(path: string, value: unknown): Promise<void> {
  const tmp = `${path}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    await inDir(tmp, async () => {
      const fh = await open(tmp, 'w');
      try {
        await fh.writeFile(jsonText(value, true));
        await fh.sync();
      } finally {
        await fh.close();
      }
    });
    await rename(tmp, path);
  } catch (err) {
    await rm(tmp, { force: true }).catch(() => undefined);
    throw err;
  }
  const dir = await open(dirname(path), 'r');
  // some filesystems refuse to flush a directory: the rename is then as durable as they make it
  await dir.sync().catch(() => undefined);
  await dir.close();
}

export async function writeTextAtomic(path: string, text: string): Promise<void> {
  const tmp = `${path}.${randomBytes(4).toString('hex')}.tmp`;
  // a string is never fewer UTF-8 bytes than characters: only a short one is measured
  const sync = text.length <= SYNC_IO_MAX_BYTES && Buffer.byteLength(text) <= SYNC_IO_MAX_BYTES;
  try {
    if (sync) {
      inDirSync(tmp, () => writeFileSync(tmp, text));
      renameSync(tmp, path);
    } else {
      await inDir(tmp, () => writeFile(tmp, text));
      await rename(tmp, path);
    }
  } catch (err) {
    // a half-written temp file on a full disk keeps it full (measured: five left, one 544 KB)
    await removeQuietly(tmp, sync);
    throw err;
  }
}

export async function loadRun(repo: string, runId: string): Promise<RunRecord> {
  const rec = await readJsonKept<RunRecord>(join(stateDir(repo, runId), 'run.json'));
  if (!rec) throw new Error(`run ${runId} has no record under ${runDir(repo, runId)}; was the workspace prepared?`);
  // a worker that restarted since prepare learns the run's secrets again before it redacts
  await registerRunSecrets([rec.input.repo, rec.worktree], rec.policy);
  return rec;
}

export async function saveRun(rec: RunRecord): Promise<void> {
  // a copy: the kept value is frozen, and the caller's objects are its own
  await writeJsonKept(join(stateDir(rec.input.repo, rec.input.runId), 'run.json'), structuredClone(rec), { pretty: true });
}

/** One redacted JSON line per event. */
export async function appendJsonl(path: string, entry: Record<string, unknown>): Promise<void> {
  const line = redact(JSON.stringify(entry)) + '\n';
  await inDir(path, () => appendKept(path, line));
}

/**
 * Workflow log lines reach events.jsonl through whichever activity runs next. A retried activity
 * hands the same lines again, so lines at or below the last written seq are skipped.
 */
export async function writeWorkflowEvents(repo: string, runId: string, lines: LogLine[] | undefined): Promise<void> {
  if (!lines?.length) return;
  const seqFile = join(stateDir(repo, runId), 'events.seq');
  const last = Number((await readRunText(seqFile).catch(() => '0')).trim()) || 0;
  const fresh = lines.filter((l) => l.seq > last);
  if (!fresh.length) return;
  // one write for the lot: a turn hands several lines, each its own open/append/close before
  const text = fresh.map((l) => redact(JSON.stringify({ at: l.at, type: l.kind, seq: l.seq, text: l.text })) + '\n').join('');
  const events = join(runDir(repo, runId), 'events.jsonl');
  await inDir(events, () => appendKept(events, text));
  await writeTextAtomic(seqFile, String(fresh[fresh.length - 1]!.seq));
}

export async function appendEvent(repo: string, runId: string, entry: Record<string, unknown>): Promise<void> {
  await appendJsonl(join(runDir(repo, runId), 'events.jsonl'), { at: new Date().toISOString(), ...entry });
}

/** A run id that an earlier execution already used: its files are that execution's, not this one's. */
export class RunIdReusedError extends KilnInputError {}

/**
 * Binds the run's directory to one execution (the first execution's Temporal run id) before
 * anything is written there: a new execution that reuses a closed run's id (anyone with gRPC
 * access may start one) must not read that run's journal, append to its audit or overwrite its
 * artifacts. The first writer claims the directory; a directory from before executions were
 * recorded is claimed by whoever writes to it next.
 */
export async function claimRunDir(repo: string, runId: string, execution: string | undefined): Promise<void> {
  if (!execution) return;
  const file = join(stateDir(repo, runId), 'execution');
  await mkdir(dirname(file), { recursive: true });
  try {
    await writeFile(file, `${execution}\n`, { flag: 'wx' });
    return;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  const owner = (await readFile(file, 'utf8')).trim();
  if (owner !== execution)
    throw new RunIdReusedError(
      `run id ${runId} belongs to execution ${owner}: this execution (${execution}) reuses it, and may not read or write that run's files; start a run with a new id`,
    );
}
