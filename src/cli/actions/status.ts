import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { approvalProgress } from '../../shared/approver.js';
import { PATCH_FILE } from '../../shared/paths.js';
import type { FanOutChild, RunState } from '../../shared/types.js';
import { TERMINAL_PHASES } from '../../shared/types.js';
import { workflowUrl } from '../../client/runs.js';
import { shellQuote } from '../../sandbox/shell-quote.js';

/** `disk`: the line of a run waiting on a full disk (client/disk-wait.ts), which the run's own state cannot know; `children`: a run of parallel attempts' children as they stand now. */
export function formatStatus(st: RunState, uiUrl?: string, o: { disk?: string; children?: ReadonlyArray<RunState | FanOutChild> } = {}): string {
  const children = o.children ?? [];
  const b = st.budget;
  const done = TERMINAL_PHASES.includes(st.phase);
  const worktree = !st.worktree ? '(not yet)' : existsSync(st.worktree) ? shellQuote(st.worktree) : `${shellQuote(st.worktree)} (removed)`;
  const lines = [
    `${st.runId}: ${st.phase}${st.reason ? ` — ${st.reason}` : ''}${st.scripted ? '  [SCRIPTED model: not a real model run]' : ''}`,
    `  goal:      ${shortGoal(st.goal)}`,
    `  repo:      ${st.repo}`,
    `  model:     ${st.model}`,
    `  attempt:   ${st.attempt}/${st.maxAttempts} · turn ${st.turn}`,
    `  tokens:    in ${b.input} · out ${b.output} · cache read ${b.cacheRead} · cache write ${b.cacheWrite} · $${b.costUsd.toFixed(4)} · ${(b.wallMs / 1000).toFixed(1)} s`,
    `  worktree:  ${worktree}`,
  ];
  if (o.disk && !done) lines.push(`  disk:      ${o.disk}`);
  if (st.recentTurns?.length) {
    lines.push(`  per turn:  (last ${st.recentTurns.length}; every turn is in metrics.json)`);
    for (const t of st.recentTurns) {
      lines.push(
        `    turn ${String(t.turn).padStart(3)}  in ${t.input} · out ${t.output} · cache read ${t.cacheRead} · cache write ${t.cacheWrite} · $${t.costUsd.toFixed(4)}`,
      );
    }
  }
  if (st.plan.length) lines.push('  plan:', ...st.plan.map((s) => `    [${s.status === 'done' ? 'x' : s.status === 'in_progress' ? '~' : ' '}] ${s.step}`));
  if (st.touchedFiles.length) lines.push(`  touched:   ${st.touchedFiles.join(', ')}`);
  if (st.lastObservation) lines.push(`  last:      ${st.lastObservation.split('\n')[0]}`);
  for (const a of st.pendingApprovals)
    lines.push(
      a.approvals ? `  waiting:   ${a.id} ${a.summary} — ${approvalProgress(a)}` : `  waiting:   ${a.id} ${a.summary} — kiln approve ${st.runId} ${a.id}`,
    );
  if (children.length) lines.push(`  attempts:  ${children.length} at once${st.winner ? `; ${st.winner} won` : ''}`);
  for (const c of children) {
    lines.push(`    ${c.runId}: ${c.phase}${c.reason ? ` — ${c.reason.split('\n')[0]}` : ''} (${c.model})`);
    for (const a of 'pendingApprovals' in c ? c.pendingApprovals : []) lines.push(`      waiting: ${a.id} ${a.summary} — kiln approve ${c.runId} ${a.id}`);
  }
  for (const p of st.preApprovals ?? [])
    lines.push(
      `  pre-approved: ${p.id} \`${p.text}\` (${p.scope === 'run' ? 'every time' : 'once'}, by ${p.by}${p.answered.length ? `; answered ${p.answered.join(', ')}` : ''})`,
    );
  if (st.phase === 'needs_human') lines.push(`  decide:    kiln hint ${st.runId} "TEXT" | kiln accept ${st.runId} | kiln abandon ${st.runId}`);
  lines.push(`  artifacts: ${shellQuote(st.artifactsDir)}`);
  if (done) lines.push(`  patch:     ${join(st.artifactsDir, PATCH_FILE)} (kiln diff ${st.runId})`);
  if (uiUrl) lines.push(`  Web UI:    ${workflowUrl(uiUrl, st.runId)}`);
  return lines.join('\n');
}

/** The goal's first line, cut at 160 characters: a long goal is in `kiln status --json` whole. */
export function shortGoal(goal: string): string {
  const first = goal.trim().split('\n')[0] ?? '';
  const cut = first.length > 160 ? `${first.slice(0, 157)}…` : first;
  return cut.length < goal.trim().length ? `${cut.replace(/…$/, '')}… (${goal.length} chars: kiln status --json has it whole)` : cut;
}
