/**
 * A sandbox kept per worktree for its read-only commands. Setting a sandbox up (namespaces, ~60
 * mounts, a cgroup, the launcher's and bwrap's execs) is most of a short command's time, and an
 * agent reads far more than it writes. A command that writes nothing (policy/read-only.ts) runs
 * with the worktree bound read-only, so nothing it does can change the worktree; such commands run
 * one after another in one sandbox, each in a fresh subshell of a small bash helper inside it.
 *
 * A kept sandbox is used only when it is exactly the sandbox the command would get now: the same
 * bwrap arguments (masks, binds, environment, limits, from a credential scan and a policy read
 * done for this command), and every path a mount was made from or onto still the same file
 * (mount-marks.ts). Otherwise it is let go and a new one is set up.
 *
 * Between commands the helper kills whatever the command left running (kill -9 -1 reaches every
 * process in the sandbox's PID namespace but its init and the helper) and checks that no process
 * is left and that /tmp, /dev/shm and HOME hold what they held at start. If either is not so, it
 * says so, and the sandbox is let go: the next command starts as clean as a sandbox of its own
 * would. The check runs after the command's result is told, beside the rest of its turn, and
 * the next command waits for it (a sandbox whose check does not come within CHECK_WAIT_MS is let
 * go): only a command's exit code waits for the command.
 *
 * Each command's output ends with a line that carries a nonce the worker drew for that command:
 * output cannot end a command early or give it another exit code without the nonce, which only
 * the helper's own variables hold (unset in the command's subshell). A timeout or a cancel kills
 * the whole sandbox.
 */
import { randomBytes } from 'node:crypto';
import { realpathSync } from 'node:fs';
import { ChildProcess } from 'node:child_process';
import type { Socket } from 'node:net';
import type { Readable, Writable } from 'node:stream';
import { signalGroup, type CommandProcess } from '../process/spawn.js';
import type { RunCgroup } from './cgroup.js';
import { SandboxSpawnError } from './errors.js';
import { CappedOutput, DEFAULT_MAX_OUTPUT_BYTES, LineChunker } from './output-buffer.js';
import { DRAIN_MS, GO_FD, startLauncher, STATUS_FD, type LaunchSpec, type ProcessResult, type RunOptions } from './run-process.js';

/** A kept sandbox unused this long is let go (its processes and its cgroup). */
export const KEPT_IDLE_MS = 30_000;
/** At most this many are kept at once (one per worktree): two small processes each. */
export const MAX_KEPT = 64;
/** Commands longer than this start their own sandbox: bash's `read` takes a pipe a byte at a time. */
export const MAX_KEPT_COMMAND_BYTES = 64 * 1024;
/** A kept sandbox whose check after a command has not come in this long is let go (its helper may have been stopped). */
export const CHECK_WAIT_MS = 5_000;
/** the helper's commands come on the fd the network handshake uses elsewhere (never both) */
const COMMAND_FD = GO_FD;

/**
 * The helper, run by bash as the sandbox's command. It reads a nonce and a command, each ended by
 * a NUL, from COMMAND_FD, and runs the command in a subshell that has neither the fd nor its own
 * variables, with bash's default glob options. It ends the command's output with
 * `\0kiln-kept <nonce> <exit code>\n`; then it kills what is left, checks the sandbox is as it
 * started (only init and itself in /proc; the same entries in /tmp, /dev/shm and HOME), and says
 * `\0kiln-checked <nonce> <1 if clean, else 0>\n` before it reads the next command. A killed
 * process is gone once the sandbox's init has reaped it: 200 quick looks cover an idle host, then
 * ~1 s of looks 5 ms apart a loaded one; one still there after that makes it unclean.
 */
export const KEPT_HELPER = [
  'shopt -s nullglob dotglob',
  'kiln_procs=(/proc/[0-9]*); kiln_procs=${#kiln_procs[@]}',
  'kiln_files=(/tmp/* /dev/shm/* "$HOME"/*); kiln_files="${kiln_files[*]}"',
  `while IFS= read -r -d '' kiln_nonce <&${COMMAND_FD} && IFS= read -r -d '' kiln_command <&${COMMAND_FD}; do`,
  `  ( exec ${COMMAND_FD}<&-; shopt -u nullglob dotglob; unset kiln_nonce kiln_procs kiln_files kiln_rc kiln_clean kiln_n kiln_seen; eval "unset kiln_command; $kiln_command" )`,
  '  kiln_rc=$?',
  `  printf '\\0kiln-kept %s %s\\n' "$kiln_nonce" "$kiln_rc"`,
  '  kiln_clean=0',
  '  for ((kiln_n = 0; kiln_n < 400; kiln_n++)); do',
  '    kill -9 -1 2>/dev/null',
  '    wait 2>/dev/null',
  '    kiln_seen=(/proc/[0-9]*)',
  '    if [ "${#kiln_seen[@]}" -le "$kiln_procs" ]; then kiln_clean=1; break; fi',
  '    [ "$kiln_n" -lt 200 ] || sleep 0.005',
  '  done',
  '  kiln_seen=(/tmp/* /dev/shm/* "$HOME"/*)',
  '  [ "${kiln_seen[*]}" = "$kiln_files" ] || kiln_clean=0',
  `  printf '\\0kiln-checked %s %s\\n' "$kiln_nonce" "$kiln_clean"`,
  'done',
].join('\n');

/** Whether a command can run in a kept sandbox at all (its text must pass through the helper's `read`). */
export function keepable(command: string, shell: string): boolean {
  return shell.endsWith('/bash') && !command.includes('\0') && Buffer.byteLength(command) <= MAX_KEPT_COMMAND_BYTES;
}

interface InFlight {
  nonce: string;
  marker: Buffer;
  capped: CappedOutput;
  chunker: LineChunker | undefined;
  /** bytes held back: they may be the start of the end marker */
  carry: Buffer;
  started: number;
  timedOut: boolean;
  aborted: boolean;
  settle(r: ProcessResult | Error): void;
}

export class KeptSandbox {
  /** false once it has ended, broke its protocol or was let go */
  private usable = true;
  private busy = false;
  private current: InFlight | undefined;
  private readonly child: CommandProcess;
  private status = '';
  private exited = false;
  private gone = false;
  private idleTimer: NodeJS.Timeout | undefined;
  /** the helper's check after the last command, until it has said how it went */
  private checking: { marker: Buffer; carry: Buffer; timer: NodeJS.Timeout; done: Promise<void>; resolve: () => void } | undefined;

  constructor(
    /** the launcher's argv and environment, as one string: equal only for the same sandbox */
    readonly key: string,
    /** mountMarks() of the argv when it was set up */
    readonly marks: string,
    /** which cgroups hold it: the argv depends on them (prlimit's fallback) */
    readonly cgroups: { pids: boolean; memory: boolean },
    private readonly spec: LaunchSpec & { cgroup?: RunCgroup },
    private readonly onGone: (s: KeptSandbox) => void,
  ) {
    this.child = startLauncher(spec, true);
    this.child.stdout!.on('data', (chunk: Buffer) => this.output(chunk));
    (this.child.stdio[STATUS_FD] as Readable | null)?.on('data', (chunk: Buffer) => {
      this.status += chunk.toString('utf8');
    });
    (this.child.stdio[COMMAND_FD] as Writable | null)?.on('error', () => undefined);
    this.child.on('error', (err: Error) => this.ended(new SandboxSpawnError(`could not start the command launcher: ${err.message}`)));
    this.child.on('exit', (code: number | null, signal: string | null) => {
      this.exited = true;
      // the output may still be on its way: wait for it, not for ever
      setTimeout(() => this.ended(code, signal), DRAIN_MS).unref();
    });
    this.child.on('close', (code: number | null, signal: string | null) => this.ended(code, signal));
    this.hold(false);
  }

  get available(): boolean {
    return this.usable && !this.busy && !this.exited && !this.checking;
  }

  /** Resolves once the helper's check after the last command has come in (or the sandbox is gone). */
  whenChecked(): Promise<void> {
    return this.checking?.done ?? Promise.resolve();
  }

  /** let go or ended, and no command of it still to settle */
  get done(): boolean {
    return !this.usable && !this.busy;
  }

  /** Runs one command; the caller checked it is `available` and keepable(). */
  run(command: string, opts: RunOptions): Promise<ProcessResult> {
    this.busy = true;
    clearTimeout(this.idleTimer);
    this.hold(true);
    const nonce = randomBytes(16).toString('hex');
    return new Promise<ProcessResult>((resolve, reject) => {
      const timers: NodeJS.Timeout[] = [];
      const onAbort = () => {
        if (!this.current) return;
        this.current.aborted = true;
        this.kill();
      };
      const flight: InFlight = {
        nonce,
        marker: Buffer.from(`\0kiln-kept ${nonce} `),
        capped: new CappedOutput(opts.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES),
        chunker: opts.onOutput ? new LineChunker(opts.onOutput) : undefined,
        carry: Buffer.alloc(0),
        started: Date.now(),
        timedOut: false,
        aborted: false,
        settle: (r) => {
          for (const t of timers) clearTimeout(t);
          opts.signal?.removeEventListener('abort', onAbort);
          flight.chunker?.end();
          this.current = undefined;
          this.busy = false;
          if (this.usable && !this.checking) this.idle();
          if (r instanceof Error) reject(r);
          else resolve(r);
        },
      };
      this.current = flight;
      if (Number.isFinite(opts.timeoutMs) && opts.timeoutMs > 0)
        timers.push(
          setTimeout(() => {
            flight.timedOut = true;
            this.kill();
          }, opts.timeoutMs),
        );
      if (opts.signal?.aborted) return onAbort();
      opts.signal?.addEventListener('abort', onAbort, { once: true });
      (this.child.stdio[COMMAND_FD] as Writable).write(`${nonce}\0${command}\0`);
    });
  }

  /** Kills the sandbox (a command in it ends as killed) and lets its cgroup go. */
  discard(): void {
    if (!this.usable && this.exited) return;
    clearTimeout(this.idleTimer);
    this.kill();
  }

  private kill(): void {
    this.usable = false;
    // a check still to come no longer matters: the sandbox goes
    this.endCheck(true);
    signalGroup(this.child, 'SIGKILL');
    void this.spec.cgroup?.killAll();
    this.onGone(this);
  }

  private idle(): void {
    this.hold(false);
    this.idleTimer = setTimeout(() => this.discard(), KEPT_IDLE_MS);
    this.idleTimer.unref();
  }

  /** A kept sandbox waiting for its next command must not keep the process (the CLI, a test) alive. */
  private hold(on: boolean): void {
    if (!(this.child instanceof ChildProcess)) return;
    if (on) this.child.ref();
    else this.child.unref();
    for (const s of this.child.stdio) (s as Partial<Socket> | null)?.[on ? 'ref' : 'unref']?.();
  }

  private output(chunk: Buffer): void {
    if (this.checking) return this.checkOutput(chunk);
    const f = this.current;
    // output between commands: something outlived its command; this sandbox is done
    if (!f) return this.discard();
    const buf = f.carry.length ? Buffer.concat([f.carry, chunk]) : chunk;
    const at = buf.indexOf(f.marker);
    if (at < 0) {
      // keep back what could be the start of the marker
      const keep = Math.min(buf.length, f.marker.length - 1);
      this.take(f, buf.subarray(0, buf.length - keep));
      f.carry = Buffer.from(buf.subarray(buf.length - keep));
      return;
    }
    this.take(f, buf.subarray(0, at));
    const rest = buf.subarray(at + f.marker.length);
    const eol = rest.indexOf(0x0a);
    if (eol < 0) {
      // the marker's end is still to come: hold the whole marker back
      f.carry = Buffer.from(buf.subarray(at));
      return;
    }
    const code = Number(rest.subarray(0, eol).toString('latin1'));
    this.startCheck(f.nonce);
    f.settle(this.result(f, code, null));
    if (eol + 1 < rest.length) this.checkOutput(rest.subarray(eol + 1));
  }

  private startCheck(nonce: string): void {
    let resolve!: () => void;
    const done = new Promise<void>((r) => (resolve = r));
    const timer = setTimeout(() => this.endCheck(false), CHECK_WAIT_MS);
    timer.unref();
    this.checking = { marker: Buffer.from(`\0kiln-checked ${nonce} `), carry: Buffer.alloc(0), timer, done, resolve };
  }

  /**
   * Output after a command's end must be exactly the helper's line saying its check: anything
   * else was written by something that outlived the command, and the sandbox is let go.
   */
  private checkOutput(chunk: Buffer): void {
    const c = this.checking!;
    const buf = c.carry.length ? Buffer.concat([c.carry, chunk]) : chunk;
    const want = c.marker.length + 2;
    const head = Math.min(buf.length, c.marker.length);
    if (!buf.subarray(0, head).equals(c.marker.subarray(0, head)) || buf.length > want) return this.endCheck(false);
    if (buf.length < want) {
      c.carry = Buffer.from(buf);
      return;
    }
    this.endCheck(buf[c.marker.length] === 0x31 && buf[c.marker.length + 1] === 0x0a);
  }

  private endCheck(clean: boolean): void {
    const c = this.checking;
    if (!c) return;
    clearTimeout(c.timer);
    this.checking = undefined;
    if (!clean) this.discard();
    else if (this.usable && !this.busy) this.idle();
    c.resolve();
  }

  private take(f: InFlight, bytes: Buffer): void {
    if (bytes.length === 0) return;
    f.capped.push(bytes);
    f.chunker?.push(bytes);
  }

  private result(f: InFlight, exitCode: number | null, signal: string | null): ProcessResult {
    return {
      exitCode,
      signal,
      timedOut: f.timedOut,
      aborted: f.aborted,
      output: f.capped.text(),
      outputBytes: f.capped.totalBytes,
      truncated: f.capped.truncated,
      durationMs: Date.now() - f.started,
    };
  }

  /** The sandbox is gone: a command in it ends as killed, or as a sandbox that never started. */
  private ended(arg: Error | number | null, signal?: string | null): void {
    if (this.gone) return;
    this.gone = true;
    const wasUsable = this.usable;
    this.usable = false;
    this.exited = true;
    clearTimeout(this.idleTimer);
    if (wasUsable) this.onGone(this);
    void this.spec.cgroup?.remove();
    this.endCheck(true);
    const f = this.current;
    if (!f) return;
    const cut = f.carry.indexOf(f.marker);
    this.take(f, cut >= 0 ? f.carry.subarray(0, cut) : f.carry);
    f.carry = Buffer.alloc(0);
    if (arg instanceof Error) return f.settle(arg);
    if (!f.timedOut && !f.aborted && !this.status.includes('"child-pid"'))
      return f.settle(new SandboxSpawnError(`the sandbox failed to start: ${f.capped.text().trim() || `exit code ${arg}`}`));
    f.settle(this.result(f, null, signal ?? 'SIGKILL'));
  }
}

const kept = new Map<string, KeptSandbox>();

/**
 * The worktree's kept sandbox: `undefined` when its one sandbox is busy (a second command at once
 * starts a sandbox of its own), else the one kept if `describe` (with that sandbox's cgroups)
 * gives its key and marks now, else a new one from `make`, replacing it.
 */
export async function keptSandbox(
  workspace: string,
  describe: (cgroups: { pids: boolean; memory: boolean }) => { key: string; marks: string },
  make: (onGone: (s: KeptSandbox) => void) => KeptSandbox,
): Promise<KeptSandbox | undefined> {
  // the helper's check after the last command is still going: a few ms, far less than a new sandbox
  await kept.get(workspace)?.whenChecked();
  // its run has ended: a sandbox made ready beside its last turn would only outlive it
  if (ended.has(workspace)) return undefined;
  const k = kept.get(workspace);
  if (k && !k.available && !k.done) return undefined;
  if (k?.available) {
    const now = describe(k.cgroups);
    if (now.key === k.key && now.marks === k.marks) {
      // the most recently used last: the first idle one is the one let go when too many are kept
      kept.delete(workspace);
      kept.set(workspace, k);
      return k;
    }
  }
  k?.discard();
  const s = make((gone) => {
    if (kept.get(workspace) === gone) kept.delete(workspace);
  });
  kept.set(workspace, s);
  // never one a command runs in: past the bound with every one busy, the next idle one goes
  if (kept.size > MAX_KEPT) [...kept.values()].find((x) => x !== s && x.available)?.discard();
  return s;
}

/** Whether the worktree has a kept sandbox, in whatever state. */
export function hasKeptSandbox(workspace: string): boolean {
  return kept.has(workspace);
}

/**
 * Lets the kept sandboxes go (tests), or with `idleOnly` those no command runs in (a worker
 * shutting down: another worker in the same process may still be running one).
 */
export function discardKeptSandboxes(o: { idleOnly?: boolean } = {}): void {
  for (const s of [...kept.values()]) if (!o.idleOnly || s.available) s.discard();
}

/** Lets the worktree's kept sandbox go: the worktree is being removed (its run ended). */
export function discardKeptSandbox(workspace: string): void {
  let real = workspace;
  try {
    real = realpathSync(workspace);
  } catch {
    // already gone: the path as given is the one it was kept under, if any
  }
  kept.get(real)?.discard();
}

/** Worktrees whose run has ended (path → when), so that none gets a kept sandbox again. */
const ended = new Map<string, number>();
/** An ended run's worktree is remembered this long: past it, its path is not reused by a run still starting sandboxes. */
const ENDED_FOR_MS = 60 * 60_000;

/**
 * The run of this worktree has ended: its kept sandbox goes, and one still being made ready (they
 * are made beside a turn, unawaited) is not kept once made.
 */
export function closeKeptSandboxes(workspace: string): void {
  const now = Date.now();
  for (const [w, at] of ended) if (now - at > ENDED_FOR_MS) ended.delete(w);
  for (const w of new Set([workspace, realOr(workspace)])) {
    ended.set(w, now);
    kept.get(w)?.discard();
  }
}

function realOr(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

/** How many sandboxes are kept (tests). */
export function keptCount(): number {
  return kept.size;
}
