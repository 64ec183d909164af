/**
 * The Web UI's Current Details, in the markdown it renders: single newlines there join lines into
 * one paragraph (the plan checklist collapsed into a sentence), so sections are separated by a
 * blank line, lists are lists, and line breaks inside a reason are hard breaks.
 */
import { approvalProgress } from '../shared/approver.js';
import type { RunState } from '../shared/types.js';

const hardBreaks = (text: string) => text.trim().split(/\r?\n/).join('  \n');

export function detailsMarkdown(s: RunState): string {
  return [
    `**${s.phase}** · attempt ${s.attempt}/${s.maxAttempts} · turn ${s.turn}${s.scripted ? ' · SCRIPTED model' : ''}`,
    s.reason ? `reason: ${hardBreaks(s.reason)}` : '',
    s.pendingApprovals
      .map((a) => `- waiting for approval ${a.id}: ${a.summary.replace(/\s+/g, ' ')}${a.approvals ? ` — ${approvalProgress(a)}` : ''}`)
      .join('\n'),
    s.plan.length ? `plan:\n\n${s.plan.map((p) => `- [${p.status === 'done' ? 'x' : ' '}] ${p.step.replace(/\s+/g, ' ')}`).join('\n')}` : '',
  ]
    .filter(Boolean)
    .join('\n\n');
}
