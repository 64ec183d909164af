import { constants } from 'node:os';
import { createSandbox } from './create-sandbox.js';
import { shellJoin } from './shell-quote.js';

export interface SandboxExecArgs {
  workspace: string;
  timeoutMs?: number;
  command: string[];
  mode?: 'bwrap' | 'off';
  bwrapPath?: string;
}

export interface SandboxExecIo {
  stdout: (s: string) => void;
  stderr: (s: string) => void;
}

/** Same default budget an agent's run_command gets when it names none. */
export const DEFAULT_EXEC_TIMEOUT_MS = 10 * 60 * 1000;
/** What timeout(1) returns when it had to kill the command. */
export const TIMEOUT_EXIT_CODE = 124;

/**
 * `kiln sandbox exec --workspace DIR [--timeout MS] -- CMD...`: one command run exactly as an
 * agent's run_command would be (same sandbox, environment and limits), for a user who wants to
 * see what the agent sees. Returns the exit code to exit with.
 */
export async function runSandboxExec(args: SandboxExecArgs, io: SandboxExecIo): Promise<number> {
  if (args.command.length === 0) {
    io.stderr('kiln sandbox exec: no command given (put it after --)\n');
    return 2;
  }
  const sandbox = await createSandbox({ mode: args.mode ?? 'bwrap', ...(args.bwrapPath ? { bwrapPath: args.bwrapPath } : {}) });
  const timeoutMs = args.timeoutMs ?? DEFAULT_EXEC_TIMEOUT_MS;
  const result = await sandbox.run(shellJoin(args.command), {
    workspace: args.workspace,
    timeoutMs,
    onOutput: io.stdout,
  });
  if (result.timedOut) {
    io.stderr(`kiln sandbox exec: timed out after ${timeoutMs} ms; the command and all its processes were killed\n`);
    return TIMEOUT_EXIT_CODE;
  }
  if (result.exitCode !== null) return result.exitCode;
  const signo = result.signal ? (constants.signals as Record<string, number>)[result.signal] : undefined;
  return 128 + (signo ?? 1);
}
