/**
 * Kiln's errors, classified once where they are defined: whether trying the same call again can
 * help, and the CLI's exit code. Activities turn `retryable` into the ApplicationFailure's
 * nonRetryable flag (activities/failure.ts); the CLI prints one line and exits with `exitCode`.
 */
export abstract class KilnError extends Error {
  /** trying the same call again can succeed (a busy API, a flaky host); false: the input must change */
  abstract readonly retryable: boolean;
  /** 2: bad input, nothing was started or it stopped before doing anything; 1: anything else */
  readonly exitCode: number = 1;
  /** how long to wait before that retry, when the other side said so */
  readonly retryAfterMs?: number;

  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }

  /** The ApplicationFailure type the workflow and the eval see. */
  get failureType(): string {
    return this.name;
  }
}

/** An error in what the user gave Kiln (a flag, a config file, a script): fix it and run again. */
export abstract class KilnInputError extends KilnError {
  readonly retryable = false;
  override readonly exitCode = 2;
}

/** The CLI's own errors, with the exit code they end the process with. */
export class CliError extends KilnError {
  readonly retryable = false;
  constructor(
    message: string,
    override readonly exitCode: number = 1,
  ) {
    super(message);
  }
}

/** Bad input: nothing was started. */
export class UsageError extends CliError {
  constructor(message: string) {
    super(message, 2);
  }
}

export function exitCodeFor(err: unknown): number {
  return err instanceof KilnError ? err.exitCode : 1;
}
