/**
 * The sandbox fails closed: when it cannot be set up, nothing runs and the caller gets one of these
 * with a message a user can act on. A command that merely fails is never an error (see CommandResult).
 */
export class SandboxUnavailableError extends Error {
  override readonly name = 'SandboxUnavailableError';
}

/** The sandbox process itself could not start or set itself up (not the command inside it failing). */
export class SandboxSpawnError extends Error {
  override readonly name: string = 'SandboxSpawnError';
}

/** The setup network could not be attached; the command provably never started (it waits for the network). */
export class SandboxNetworkError extends SandboxSpawnError {
  override readonly name = 'SandboxNetworkError';
}
