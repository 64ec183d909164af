/** `kiln policy check|redact|test`: the policy and redaction as a run sees them, for users. */
import { existsSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { defaultPolicyConfig, loadPolicyConfig } from '../../policy/index.js';
import { explainCommand } from '../../shell/explain.js';
import type { ApprovalMode } from '../../policy/types.js';
import { createStreamRedactor } from '../../redact/index.js';
import { UsageError } from '../../shared/errors.js';
import { COMMAND_TOOLS } from '../../tools/catalog.js';
import { evaluate, runPolicyCases } from '../../tools/evaluate.js';

export async function policyCheck(
  o: { workspace: string; tool: string; input: string; mode: string; json?: boolean; explain?: boolean },
  out: (s: string) => void,
): Promise<void> {
  const ws = resolve(o.workspace);
  if (!existsSync(ws) || !statSync(ws).isDirectory()) throw new UsageError(`--workspace ${o.workspace}: no such directory`);
  if (!['strict', 'default', 'auto'].includes(o.mode)) throw new UsageError(`--mode ${o.mode}: use strict, default or auto`);
  let input: unknown;
  try {
    input = JSON.parse(o.input);
  } catch (err) {
    throw new UsageError(`--input is not valid JSON: ${(err as Error).message}`);
  }
  const config = existsSync(resolve(ws, '.kiln')) ? await loadPolicyConfig(ws) : defaultPolicyConfig();
  const d = await evaluate(o.tool, input, { workspace: ws, config, mode: o.mode as ApprovalMode, checks: [] });
  const command = (input as { command?: unknown } | null)?.command;
  const explain = o.explain && COMMAND_TOOLS.has(o.tool) && typeof command === 'string' ? await explainCommand(command) : undefined;
  if (o.json) {
    out(JSON.stringify(explain ? { ...d, explain } : d));
    return;
  }
  out(`${d.decision}  ${d.rule}  ${d.reason}`);
  for (const s of d.segments ?? []) out(`  segment: ${s.via?.length ? `[${s.via.join(' > ')}] ` : ''}${s.text}`);
  for (const l of explain ?? []) out(l);
}

export async function policyRedact(): Promise<void> {
  const r = createStreamRedactor();
  process.stdin.setEncoding('utf8');
  for await (const chunk of process.stdin) process.stdout.write(r.push(chunk as string));
  process.stdout.write(r.end());
}

export async function policyTest(file: string, o: { policy?: string; json?: boolean }, out: (s: string) => void): Promise<boolean> {
  if (!existsSync(file)) throw new UsageError(`${file}: no such file`);
  const res = await runPolicyCases(resolve(file), { policyFile: o.policy ? resolve(o.policy) : undefined });
  if (o.json) {
    out(JSON.stringify({ passed: res.passed, failed: res.failed, results: res.results }));
  } else {
    for (const r of res.results.filter((r) => !r.ok)) {
      out(`✘ ${r.id}: expected ${r.expect}, got ${r.got.decision} (${r.got.rule}: ${r.got.reason})`);
    }
  }
  out(`${res.passed} passed, ${res.failed} failed`);
  return res.failed === 0;
}
