/**
 * Kiln's errors, classified once where they are defined: whether trying the same call again can
 * help, and the CLI's exit code. Activities turn `retryable` into the ApplicationFailure's
 * nonRetryable flag (activities/failure.ts); the CLI prints one line and exits with `exitCode`.
 */
export class KilnError extends Error {
    /** 2: bad input, nothing was started or it stopped before doing anything; 1: anything else */
    exitCode = 1;
    /** how long to wait before that retry, when the other side said so */
    retryAfterMs;
    constructor(message, options) {
        super(message, options);
        this.name = new.target.name;
    }
    /** The ApplicationFailure type the workflow and the eval see. */
    get failureType() {
        return this.name;
    }
}
/** An error in what the user gave Kiln (a flag, a config file, a script): fix it and run again. */
export class KilnInputError extends KilnError {
    retryable = false;
    exitCode = 2;
}
/** The CLI's own errors, with the exit code they end the process with. */
export class CliError extends KilnError {
    exitCode;
    retryable = false;
    constructor(message, exitCode = 1) {
        super(message);
        this.exitCode = exitCode;
    }
}
/** Bad input: nothing was started. */
export class UsageError extends CliError {
    constructor(message) {
        super(message, 2);
    }
}
export function exitCodeFor(err) {
    return err instanceof KilnError ? err.exitCode : 1;
}
