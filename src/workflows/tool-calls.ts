/**
 * Running a turn's tool calls from the workflow: the reads a turn starts with in one activity,
 * one activity per other call, and a call the policy asks about after its people decided.
 */
import type { RunToolResult, ToolCallView } from '../shared/contracts.js';
import { askPeople, type Answer } from './approvals.js';
import type { RunContext } from './context.js';
import { toolOptions, type Acts } from './options.js';
import { COMMAND_TOOLS, READ_ONLY_TOOLS } from '../tools/catalog.js';

export type ToolOutcome = { kind: 'done'; result: RunToolResult } | { kind: 'approval_timeout'; approvalId: string };

/**
 * The reads a turn starts with run in one activity instead of one each (they cannot need an
 * approval, and nothing before them changes the worktree).
 */
export async function prefetchReads(ctx: RunContext, acts: Acts, calls: ToolCallView[]): Promise<Map<string, RunToolResult>> {
  const lead: ToolCallView[] = [];
  for (const c of calls) {
    if (c.inputError || !READ_ONLY_TOOLS.has(c.name)) break;
    lead.push(c);
  }
  if (lead.length < 2) return new Map();
  const results = await acts.runTools.executeWithOptions(
    {
      ...toolOptions(ctx.input),
      summary: `turn ${ctx.state.turn}: ${lead
        .map((c) => c.summary)
        .join('; ')
        .slice(0, 200)}`,
    },
    [{ ...ctx.ref(), events: ctx.takeUnwritten(), toolUseIds: lead.map((c) => c.id), grants: ctx.state.grants }],
  );
  return new Map(results.filter((r) => r.result.status !== 'ask').map((r) => [r.id, r.result]));
}

/** One tool call; when the policy asks, the call waits for a person's decision or its timeout. */
export async function runOneTool(ctx: RunContext, acts: Acts, call: ToolCallView): Promise<ToolOutcome> {
  const { state, input } = ctx;
  const exec = (approvedHash?: string) =>
    acts.runTool.executeWithOptions({ ...toolOptions(input), summary: `turn ${state.turn}: ${call.summary}` }, [
      { ...ctx.ref(), events: ctx.takeUnwritten(), toolUseId: call.id, approvedHash, grants: state.grants },
    ]);
  // a command may run for minutes: the live view shows it when it starts, not only when it ends
  if (COMMAND_TOOLS.has(call.name)) ctx.note('tool', `${call.summary} … running`);
  const res = await exec();
  if (res.status !== 'ask') {
    ctx.note('tool', `${call.summary}${outcomeSuffix(res)}`);
    return { kind: 'done', result: res };
  }
  const answer = await askPeople(ctx, call, res);
  if (answer.kind === 'timeout') return { kind: 'approval_timeout', approvalId: answer.approvalId };
  return afterDecision(ctx, acts, call, answer, exec);
}

/** A decided approval: a rejection goes back to the model; an approval runs the call it was given for (its hash). */
async function afterDecision(
  ctx: RunContext,
  acts: Acts,
  call: ToolCallView,
  d: Omit<Extract<Answer, { kind: 'decided' }>, 'kind' | 'approvalId'>,
  exec: (approvedHash?: string) => Promise<RunToolResult>,
): Promise<ToolOutcome> {
  const { state } = ctx;
  ctx.approvedBy(...d.approvers);
  ctx.phase('editing');
  if (!d.approve) {
    const why = d.reason?.trim() || 'no reason given';
    const rejected = await acts.recordToolResult({
      ...ctx.ref(),
      events: ctx.takeUnwritten(),
      toolUseId: call.id,
      content: `A person (${d.by}) rejected this call: ${why}. Do not retry it as is; find another way or explain.`,
      isError: true,
    });
    return { kind: 'done', result: rejected };
  }
  if (d.scope === 'run' && d.grantKey && !state.grants.includes(d.grantKey)) {
    state.grants.push(d.grantKey);
  }
  const result = await exec(d.hash);
  ctx.note('tool', `${call.summary}${outcomeSuffix(result)}`);
  return { kind: 'done', result };
}

/** " → exit code 1", " — denied (rule)", " — failed": what a person scanning the live log needs. */
export function outcomeSuffix(res: RunToolResult): string {
  if (res.status === 'denied') return ` — denied (${res.rule})`;
  if (res.status !== 'done') return '';
  const command = / → ([^:]+)/.exec(res.summary)?.[1];
  if (command) return ` → ${command}`;
  if (res.recovered) return ' (already applied before a restart)';
  return res.ok ? '' : ` — failed: ${res.summary.split(': ').slice(1).join(': ').slice(0, 120)}`;
}
