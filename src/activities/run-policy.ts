/** The policy a run is judged by: fixed at prepare (user over repo), recomputed for older run records. */
import type { PolicyConfig } from '../policy/config.js';
import { loadRunSettings } from '../policy/precedence.js';
import { kilnHomeDir } from '../policy/trust.js';
import type { ApprovalMode } from '../shared/types.js';
import type { SensitiveConfig } from '../sandbox/sensitive-files.js';
import type { RunRecord } from '../store/run-files.js';

export async function runPolicy(rec: RunRecord, env: NodeJS.ProcessEnv): Promise<{ config: PolicyConfig; mode: ApprovalMode }> {
  if (rec.policy) return { config: rec.policy, mode: rec.mode ?? rec.input.approvalMode };
  const s = await loadRunSettings(rec.input.repo, { home: kilnHomeDir(env), approvalMode: rec.input.approvalMode });
  return { config: s.policy, mode: s.mode };
}

/** What the sandbox masks for this run: the same sensitive globs (and exceptions) the policy judges by. */
export function sandboxSensitive(config: PolicyConfig): SensitiveConfig {
  return { sensitive: config.sensitive, allowSensitive: config.allowSensitive };
}
