export type { CommandOptions, CommandResult, Sandbox } from './types.js';
export { createSandbox, clearProbeCache, type CreateSandboxOptions } from './create-sandbox.js';
export { probeSandbox, type ProbeCheck, type ProbeResult } from './probe.js';
export { probeSummary } from './probe-summary.js';
export { runSandboxExec, TIMEOUT_EXIT_CODE, DEFAULT_EXEC_TIMEOUT_MS, type SandboxExecArgs, type SandboxExecIo } from './exec.js';
export { SandboxUnavailableError, SandboxSpawnError } from './errors.js';
export { defaultLimits, type SandboxLimits } from './limits.js';
export { shellQuote, shellJoin } from './shell-quote.js';
export { closeKeptSandboxes, discardKeptSandbox, discardKeptSandboxes } from './kept-sandbox.js';

export { DEFAULT_MAX_OUTPUT_BYTES } from './output-buffer.js';
export type { ServerLaunch, ServerLaunchSpec } from './server-launch.js';
