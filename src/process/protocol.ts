/**
 * Messages between the worker and its spawner (spawner-main.ts). Types only: the spawner imports
 * nothing but Node built-ins, so it is started without Kiln's module graph.
 */

/** How one fd of the command is set up. A file's fd cannot cross Node IPC, so a file the command
 * must hold open (the sandbox's seccomp program) is named by path and opened by whoever spawns. */
export type StdioSpec = 'pipe' | 'ignore' | { file: string };

export interface SpawnRequest {
  t: 'spawn';
  id: number;
  file: string;
  args: string[];
  cwd?: string;
  env: Record<string, string>;
  detached: boolean;
  /** node's own spawn timeout: killSignal after this many ms */
  timeout?: number;
  killSignal?: string;
  stdio: StdioSpec[];
  /** pipes the spawner hands over to the worker (a socket's fd can cross the channel) instead of relaying each chunk */
  handOver?: number[];
}

export type ToSpawner =
  | SpawnRequest
  | { t: 'kill'; id: number; signal: string }
  | { t: 'write'; id: number; fd: number; data: Buffer }
  | { t: 'end'; id: number; fd: number }
  /** the worker gave up on this fd (a process that escaped still holds the pipe): stop reading it */
  | { t: 'destroy'; id: number; fd: number };

export type FromSpawner =
  | { t: 'spawned'; id: number; pid: number }
  | { t: 'data'; id: number; fd: number; data: Buffer }
  | { t: 'eof'; id: number; fd: number }
  /** sent with the pipe's socket as the message's handle */
  | { t: 'handle'; id: number; fd: number }
  | { t: 'exit'; id: number; code: number | null; signal: string | null }
  | { t: 'close'; id: number; code: number | null; signal: string | null }
  | { t: 'error'; id: number; message: string; code?: string };
