import type { ProbeResult } from './probe.js';
import type { ServerLaunch, ServerLaunchSpec } from './server-launch.js';

/** What a command run returns. A command never throws into the agent loop: failures are data. */
export interface CommandResult {
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  /** true when opts.signal aborted the run (the process group was killed, like on a timeout) */
  aborted?: boolean;
  /** stdout and stderr interleaved as they arrived, capped at maxOutputBytes (head and tail kept). */
  output: string;
  /** bytes the command wrote in all, before capping */
  outputBytes: number;
  truncated: boolean;
  durationMs: number;
  /** false only when the user turned the sandbox off */
  sandboxed: boolean;
  /** traceFile was asked for and strace ran around the command */
  traced?: boolean;
  /** the worktree was bound read-only (asked with workspaceReadOnly, and sandboxed): the command changed nothing in it */
  workspaceReadOnly?: boolean;
}

export interface CommandOptions {
  /** absolute path of the worktree: the cwd and the only writable place */
  workspace: string;
  timeoutMs: number;
  /** only the repo's setup step gets the network: the outside, through slirp4netns, never the host's loopback */
  network?: boolean;
  maxOutputBytes?: number;
  /**
   * host paths the command may read (never write) although they sit outside the worktree:
   * dependencies a repo's `.kiln/config` links into it, which may live under a masked /home or /tmp
   */
  readOnlyPaths?: string[];
  /**
   * paths inside the worktree (absolute) the command cannot write, whatever it runs: the kernel
   * holds them read-only (EROFS), a folder with everything in it, new files included
   */
  protectedPaths?: string[];
  /**
   * the repository as the command may read it (activities/git-view.ts): its history without the
   * blobs of sensitive files, in place of the real git directory; 'none': no git directory at all
   */
  gitView?: { dir: string; gitFile: string } | 'none';
  /**
   * the run's sensitive-file policy (extra globs, explicit exceptions): matching files in the
   * worktree are masked; without it, Kiln's built-in list applies
   */
  sensitive?: { sensitive: string[]; allowSensitive: string[] };
  /**
   * a host folder of warm tool caches (Go, npm, pip, cargo) the command may write; the caller
   * picks one that no other run shares unless it is trusted (see checks/caches.ts)
   */
  cacheDir?: string;
  /**
   * the worktree is bound read-only: the command cannot change a file in it (a write fails with
   * EROFS). Only a sandbox can hold it so; an unsandboxed command runs as always, and its result
   * says which it was.
   */
  workspaceReadOnly?: boolean;
  /**
   * a host file (outside every mount) that receives an strace log of the files the command's
   * process tree opened, probed and executed (checks/trace.ts reads it); the command runs
   * untraced when strace is missing, and its result says so
   */
  traceFile?: string;
  /** extra variables, added to the allowlisted environment */
  env?: Record<string, string>;
  /** streamed chunks (already whole lines where possible), e.g. for heartbeats or a live view */
  onOutput?: (chunk: string) => void;
  signal?: AbortSignal;
}

export interface Sandbox {
  readonly kind: 'bwrap' | 'off';
  /** what the start-up probe proved on this host (bwrap only) */
  readonly probe?: ProbeResult;
  run(command: string, opts: CommandOptions): Promise<CommandResult>;
  /** how to start a long-lived server (an MCP server over stdio) in a sandbox of its own (server-launch.ts) */
  serverLaunch(spec: ServerLaunchSpec): Promise<ServerLaunch>;
  /**
   * Set up the worktree's sandbox for read-only commands with the options `opts` gives, unless one
   * is kept (kept-sandbox.ts): called while the model thinks. Fire and forget; nothing on failure.
   */
  keepReady?(workspace: string, opts: () => Promise<CommandOptions>): void;
}
