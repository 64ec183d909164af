import { KilnError } from '../shared/errors.js';

/**
 * The sandbox fails closed: when it cannot be set up, nothing runs and the caller gets one of these
 * with a message a user can act on. A command that merely fails is never an error (see CommandResult).
 */
export class SandboxUnavailableError extends KilnError {
  override readonly name = 'SandboxUnavailableError';
  // bwrap missing or refused by the kernel: the same host will refuse again until someone fixes it
  readonly retryable = false;
}

/** The sandbox process itself could not start or set itself up (not the command inside it failing). */
export class SandboxSpawnError extends KilnError {
  override readonly name: string = 'SandboxSpawnError';
  // a process that could not start (out of pids, a busy disk) may start on the next try
  readonly retryable = true;
}

/** The setup network could not be attached; the command provably never started (it waits for the network). */
export class SandboxNetworkError extends SandboxSpawnError {
  override readonly name = 'SandboxNetworkError';
}
