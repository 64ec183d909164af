/** One error style for the CLI: a few named errors, each with its exit code; one line printed. */
export class CliError extends Error {
  constructor(message: string, readonly exitCode: number = 1) {
    super(message);
  }
}

/** Bad input: nothing was started. */
export class UsageError extends CliError {
  constructor(message: string) {
    super(message, 2);
  }
}

/** Errors from our own modules that mean "fix your input", mapped to exit 2. */
const INPUT_ERRORS = new Set([
  'KilnConfigError',
  'PolicyConfigError',
  'ScriptError',
  'TemporalUnreachableError',
  'TemporalCliError',
  'UsageError',
]);

export function exitCodeFor(err: unknown): number {
  if (err instanceof CliError) return err.exitCode;
  if (err instanceof Error && (INPUT_ERRORS.has(err.name) || INPUT_ERRORS.has(err.constructor.name))) return 2;
  return 1;
}
