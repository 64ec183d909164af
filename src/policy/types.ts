import type { PolicyConfig } from './config.js';

export type Decision = 'allow' | 'deny' | 'ask';
export type ApprovalMode = 'strict' | 'default' | 'auto';
export type { PolicyConfig } from './config.js';

/** One simple command found by the shell parser, wrappers (bash -c, env, xargs...) unwrapped. */
export interface CommandSegment {
  argv: string[];
  /** the segment as the user should read it in an approval request */
  text: string;
  /** e.g. ["bash -c"] when the segment came from inside a wrapper */
  via?: string[];
  /** redirections, e.g. ["> out.txt", "2>&1"]; part of the hash, so `> a` and `> b` differ */
  redirects?: string[];
}

export interface PolicyDecision {
  decision: Decision;
  /** stable rule id, e.g. "path.outside-workspace", "command.network" */
  rule: string;
  /** one sentence a person and the model can act on */
  reason: string;
  /** for ask: identifies "the same kind of call", the key of a run-wide approval */
  grantKey?: string;
  /** sha256 of the canonical parsed call; an approval is bound to it */
  hash?: string;
  /** run_command only: the parsed segments */
  segments?: CommandSegment[];
  /** run_command only: re-running after a crash cannot do harm (read-only commands, the checks) */
  safeToRepeat?: boolean;
}

export interface PolicyContext {
  /** absolute path of the worktree */
  workspace: string;
  config: PolicyConfig;
  mode: ApprovalMode;
  /** the repo's check commands: always allowed, safe to repeat */
  checks: string[];
  /** the run's own protected globs (--protect, an eval task's tests): the policy's `unprotect` does not undo them */
  protect?: string[];
  /** this run may change protected files (tests) */
  allowProtectedWrites?: boolean;
  /** files (relative to the worktree) this run created or changed: running one asks, showing it */
  changedFiles?: string[];
  /** the MCP tools this run discovered (`mcp__server__tool`): a call to any other MCP name is denied */
  mcpTools?: readonly string[];
  /** home directory used for `~` and $HOME in commands; defaults to os.homedir() */
  home?: string;
}
