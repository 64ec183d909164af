export { canonicalJson } from './evaluate.js';
export { judgeCommand, grantKeyFor, type CommandJudgement } from './commands.js';
export {
  loadPolicyConfig,
  defaultPolicyConfig,
  parsePolicyConfig,
  parsePolicyConfigText,
  policyConfigSchema,
  PolicyConfigError,
  DEFAULT_PROTECTED,
  type PolicyConfig,
} from './config.js';
export { resolveWorkspacePath, type ResolvedPath } from './paths.js';
export { isSensitivePath, isExecutableConfig, globTargetsSensitive, BUILTIN_SENSITIVE, EXECUTABLE_CONFIG } from './globs.js';
export type { PolicyCaseResult, PolicyCasesReport } from './cases.js';
export type { ApprovalMode, CommandSegment, Decision, PolicyContext, PolicyDecision } from './types.js';
