import type { RunState } from '../../shared/types.js';

export function formatStatus(st: RunState): string {
  const b = st.budget;
  const lines = [
    `${st.runId}: ${st.phase}${st.reason ? ` — ${st.reason}` : ''}${st.scripted ? '  [SCRIPTED model: not a real model run]' : ''}`,
    `  goal:     ${st.goal}`,
    `  attempt:  ${st.attempt}/${st.maxAttempts} · turn ${st.turn}`,
    `  tokens:   in ${b.input} · out ${b.output} · cache read ${b.cacheRead} · cache write ${b.cacheWrite} · $${b.costUsd.toFixed(4)} · ${(b.wallMs / 1000).toFixed(1)} s`,
    `  worktree: ${st.worktree ?? '(not yet)'}`,
  ];
  if (st.plan.length) lines.push('  plan:', ...st.plan.map((s) => `    [${s.status === 'done' ? 'x' : s.status === 'in_progress' ? '~' : ' '}] ${s.step}`));
  if (st.touchedFiles.length) lines.push(`  touched:  ${st.touchedFiles.join(', ')}`);
  if (st.lastObservation) lines.push(`  last:     ${st.lastObservation.split('\n')[0]}`);
  for (const a of st.pendingApprovals) lines.push(`  waiting:  ${a.id} ${a.summary} — kiln approve ${st.runId} ${a.id}`);
  return lines.join('\n');
}
