import type { Readable, Writable } from 'node:stream';
import { signalGroup as signalProcessGroup, spawnCommand, type CommandProcess } from '../process/spawn.js';
import { CappedOutput, DEFAULT_MAX_OUTPUT_BYTES, LineChunker } from './output-buffer.js';
import type { RunCgroup } from './cgroup.js';
import { SandboxNetworkError, SandboxSpawnError } from './errors.js';

/** Time a command gets between SIGTERM and SIGKILL once its timeout has passed. */
export const KILL_GRACE_MS = 500;
/** How long to wait for the output pipe to drain after the command exited. */
export const DRAIN_MS = 1000;

/** Joins the cgroups its arguments name (a count, then the files): the shell moves itself, and what it execs stays. */
export const JOIN_CGROUPS = [
  'n=$1; shift',
  'while [ "$n" -gt 0 ]; do',
  '  echo 0 > "$1" || { echo "kiln: cannot join cgroup $1" >&2; exit 125; }',
  '  shift; n=$((n-1))',
  'done',
];

/**
 * Joins the run's cgroups (before exec, so not a single child escapes the limits), sets the
 * rlimits, merges stderr into stdout (one pipe keeps the two interleaved in the order they were
 * written) and execs.
 * It writes 0, not its pid: "the writer itself" is what lets the kernel skip its global lock on a
 * v1 `tasks` file (cgroup.ts, joinFiles).
 */
const LAUNCHER = [
  'exec 2>&1',
  ...JOIN_CGROUPS,
  'n=$1; shift',
  'while [ "$n" -gt 0 ]; do',
  '  ulimit "$1" "$2" || { echo "kiln: cannot set the limit ulimit $1 $2"; exit 125; }',
  '  shift 2; n=$((n-1))',
  'done',
  'exec "$@"',
].join('\n');

export interface LaunchSpec {
  argv: string[];
  env: Record<string, string>;
  cwd: string;
  /** bwrap reports on fd 3 whether it got as far as running the command */
  bwrapStatus: boolean;
  cgroup?: RunCgroup;
  /** `ulimit` flag and value pairs the launcher sets before it execs (limits.ts, shellLimits) */
  rlimits?: string[];
  /**
   * the compiled seccomp program, opened for the launched process as fd 4 by whichever process
   * spawns it (fds do not cross to the worker's spawner)
   */
  seccompFile?: string;
  /**
   * Network for the sandbox, set up from outside once it exists: bwrap writes the child's pid on
   * INFO_FD, the sandbox's shell says it is ready on READY_FD and holds the command until a byte
   * arrives on GO_FD. A rejection kills the sandbox before the command runs, and the run fails
   * with that reason.
   */
  attachNetwork?: (childPid: number) => Promise<{ stop(): void }>;
}

/** fds the launched process gets: bwrap's status, the seccomp program, then the network handshake */
export const STATUS_FD = 3;
export const SECCOMP_FD = 4;
export const INFO_FD = 5;
export const GO_FD = 6;
export const READY_FD = 7;

export interface RunOptions {
  timeoutMs: number;
  maxOutputBytes?: number;
  onOutput?: (chunk: string) => void;
  signal?: AbortSignal;
}

export interface ProcessResult {
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  aborted: boolean;
  output: string;
  outputBytes: number;
  truncated: boolean;
  durationMs: number;
}

/**
 * Starts the launcher for `spec`, which execs spec.argv. With `commandPipe`, fd GO_FD is a pipe
 * the caller writes to: a kept sandbox's helper reads its commands there (kept-sandbox.ts), which
 * never has the network handshake that uses it otherwise.
 */
export function startLauncher(spec: LaunchSpec, commandPipe = false): CommandProcess {
  const joinFiles = spec.cgroup?.joinFiles ?? [];
  const rlimits = spec.rlimits ?? [];
  return spawnCommand(
    '/bin/sh',
    ['-c', LAUNCHER, 'kiln-launch', String(joinFiles.length), ...joinFiles, String(rlimits.length / 2), ...rlimits, ...spec.argv],
    {
      cwd: spec.cwd,
      env: spec.env,
      // Own process group, so a timeout can kill the command and everything it started.
      detached: true,
      stdio: [
        'ignore',
        'pipe',
        'ignore',
        spec.bwrapStatus ? 'pipe' : 'ignore',
        spec.seccompFile !== undefined ? { file: spec.seccompFile } : 'ignore',
        spec.attachNetwork ? 'pipe' : 'ignore',
        spec.attachNetwork || commandPipe ? 'pipe' : 'ignore',
        spec.attachNetwork ? 'pipe' : 'ignore',
      ],
      // a kept sandbox's output and commands pass between the worker and its helper with no hop
      // through the spawner: the command is most of a reader's time (docs/bench.md)
      ...(commandPipe ? { handOver: [1, GO_FD] } : {}),
    },
  );
}

/**
 * The sandbox's network is attached once the launcher has named its child and said it is ready;
 * only then is the command let go. `over`: the run ended or is being killed meanwhile.
 */
function attachNetworkWhenReady(
  child: ReturnType<typeof startLauncher>,
  attach: NonNullable<LaunchSpec['attachNetwork']>,
  h: { over: () => boolean; attached: (n: Awaited<ReturnType<typeof attach>>) => void; failed: (message: string) => void },
): void {
  const stdio = child.stdio as unknown as Array<Readable & Writable>;
  const [info, go, ready] = [stdio[INFO_FD]!, stdio[GO_FD]!, stdio[READY_FD]!];
  let infoText = '';
  let childPid: number | undefined;
  let isReady = false;
  let asked = false;
  const maybeAttach = () => {
    if (asked || childPid === undefined || !isReady) return;
    asked = true;
    attach(childPid).then(
      (n) => {
        if (h.over()) return n.stop();
        h.attached(n);
        go.end('go\n');
      },
      (err: Error) => {
        // a sandbox already being killed (timeout, abort) takes its namespace along: not a network failure
        if (h.over()) return;
        h.failed(err.message);
      },
    );
  };
  info.on('data', (chunk: Buffer) => {
    infoText += chunk.toString('utf8');
    // the number must be complete: a chunk may end in the middle of it
    const m = /"child-pid"\s*:\s*(\d+)\s*[,}\n]/.exec(infoText);
    if (m) childPid = Number(m[1]);
    maybeAttach();
  });
  ready.on('data', () => {
    isReady = true;
    maybeAttach();
  });
  for (const s of [info, go, ready]) s.on('error', () => undefined);
}

/** A command whose signal was aborted before it started: nothing ran. */
function abortedBeforeStart(): ProcessResult {
  return {
    exitCode: null,
    signal: null,
    timedOut: false,
    aborted: true,
    output: '',
    outputBytes: 0,
    truncated: false,
    durationMs: 0,
  };
}

/** What the command printed (capped) and how it ended. */
function resultOf(capped: CappedOutput, end: Pick<ProcessResult, 'exitCode' | 'signal' | 'timedOut' | 'aborted'>, started: number): ProcessResult {
  return { ...end, output: capped.text(), outputBytes: capped.totalBytes, truncated: capped.truncated, durationMs: Date.now() - started };
}

export function launchAndWait(spec: LaunchSpec, opts: RunOptions): Promise<ProcessResult> {
  const started = Date.now();
  const capped = new CappedOutput(opts.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES);
  const chunker = opts.onOutput ? new LineChunker(opts.onOutput) : undefined;

  return new Promise<ProcessResult>((resolvePromise, rejectPromise) => {
    if (opts.signal?.aborted) {
      resolvePromise(abortedBeforeStart());
      return;
    }
    const child = startLauncher(spec);

    let timedOut = false;
    let aborted = false;
    let killRequested = false;
    let status = '';
    let network: { stop(): void } | undefined;
    let networkError: string | undefined;
    let exitCode: number | null = null;
    let exitSignal: string | null = null;
    let exited = false;
    let settled = false;
    const timers: NodeJS.Timeout[] = [];

    const signalGroup = (sig: NodeJS.Signals) => signalProcessGroup(child, sig);
    const terminate = () => {
      if (killRequested) return;
      killRequested = true;
      signalGroup('SIGTERM');
      timers.push(
        setTimeout(() => {
          signalGroup('SIGKILL');
          void spec.cgroup?.killAll();
        }, KILL_GRACE_MS),
      );
    };

    if (Number.isFinite(opts.timeoutMs) && opts.timeoutMs > 0) {
      timers.push(
        setTimeout(() => {
          timedOut = true;
          terminate();
        }, opts.timeoutMs),
      );
    }
    const onAbort = () => {
      aborted = true;
      terminate();
    };
    opts.signal?.addEventListener('abort', onAbort, { once: true });

    const stdout = child.stdout as Readable;
    stdout.on('data', (chunk: Buffer) => {
      capped.push(chunk);
      chunker?.push(chunk);
    });
    if (spec.attachNetwork) {
      attachNetworkWhenReady(child, spec.attachNetwork, {
        over: () => settled || killRequested,
        attached: (n) => {
          network = n;
        },
        failed: (message) => {
          networkError = message;
          terminate();
        },
      });
    }
    const statusStream = spec.bwrapStatus ? (child.stdio[STATUS_FD] as Readable | null) : null;
    statusStream?.on('data', (chunk: Buffer) => {
      status += chunk.toString('utf8');
    });

    const finish = async () => {
      if (settled) return;
      settled = true;
      for (const t of timers) clearTimeout(t);
      opts.signal?.removeEventListener('abort', onAbort);
      // Whatever the command left running (background jobs, daemons) dies with it.
      signalGroup('SIGKILL');
      network?.stop();
      await spec.cgroup?.remove();
      chunker?.end();
      if (networkError !== undefined) {
        rejectPromise(new SandboxNetworkError(`the sandbox's network could not be set up, so the command did not run: ${networkError}`));
        return;
      }
      const commandRan = !spec.bwrapStatus || status.includes('"exit-code"');
      if (!commandRan && !killRequested) {
        rejectPromise(new SandboxSpawnError(`the sandbox failed to start: ${capped.text().trim() || `exit code ${exitCode}`}`));
        return;
      }
      resolvePromise(resultOf(capped, { exitCode, signal: exitSignal, timedOut, aborted }, started));
    };

    child.on('error', (err: Error) => {
      if (settled) return;
      settled = true;
      for (const t of timers) clearTimeout(t);
      opts.signal?.removeEventListener('abort', onAbort);
      void spec.cgroup?.remove();
      // the launcher could not start, or the worker's spawner died under it (the message says which)
      rejectPromise(new SandboxSpawnError(`${exited ? 'the command launcher failed' : 'could not start the command launcher'}: ${err.message}`));
    });
    child.on('exit', (code: number | null, sig: string | null) => {
      exited = true;
      exitCode = code;
      exitSignal = sig;
      signalGroup('SIGKILL');
      void spec.cgroup?.killAll();
      // A process that escaped the group may still hold the pipe open; do not wait for it forever.
      timers.push(
        setTimeout(() => {
          for (const s of child.stdio) s?.destroy();
          void finish();
        }, DRAIN_MS),
      );
    });
    child.on('close', () => {
      if (exited) void finish();
    });
  });
}
