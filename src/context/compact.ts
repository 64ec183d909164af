/**
 * Compaction: when the conversation nears the model's window, older turns are folded into one
 * summary message that keeps what the coder needs to go on — the goal, the plan, the touched
 * files, the failures and what each earlier call did — and the recent turns stay verbatim.
 * Deterministic and free: no model call.
 */
import type Anthropic from '@anthropic-ai/sdk';
import { estimateTokens } from '../shared/tokens.js';

/** Recent messages kept verbatim: the last three assistant/user exchanges. */
export const KEEP_RECENT_MESSAGES = 6;
const CALL_LINE_MAX = 160;

export interface CompactionMemory {
  goal: string;
  plan: Array<{ step: string; status: string }>;
  touchedFiles: string[];
  failures: string[];
}

/** Messages are never changed once made, and a turn counts the whole conversation several times. */
const counted = new WeakMap<object, number>();

export function conversationTokens(messages: Anthropic.MessageParam[]): number {
  let n = 0;
  for (const m of messages) {
    let t = counted.get(m);
    if (t === undefined) counted.set(m, (t = estimateTokens(m)));
    n += t;
  }
  return n;
}

/**
 * Returns the compacted conversation, or undefined when there is nothing worth folding.
 * The kept tail starts at an assistant message, so every tool_result still follows its tool_use.
 */
export function compactConversation(
  messages: Anthropic.MessageParam[],
  memory: CompactionMemory,
): { messages: Anthropic.MessageParam[]; removed: number } | undefined {
  let cut = messages.length - KEEP_RECENT_MESSAGES;
  while (cut > 1 && messages[cut]?.role !== 'assistant') cut--;
  if (cut <= 1) return undefined;
  const older = messages.slice(0, cut);
  const summary = [
    'Summary of earlier turns (folded by Kiln to stay inside the context window; the recent turns follow verbatim).',
    `Goal: ${memory.goal}`,
    memory.plan.length ? `Plan:\n${memory.plan.map((s) => `- [${s.status}] ${s.step}`).join('\n')}` : 'Plan: (none recorded)',
    `Files touched so far: ${memory.touchedFiles.join(', ') || '(none)'}`,
    memory.failures.length ? `Failures so far:\n${memory.failures.map((f) => `- ${f}`).join('\n')}` : 'Failures so far: none',
    `Earlier calls:\n${describeCalls(older).join('\n')}`,
  ].join('\n\n');
  return { messages: [{ role: 'user', content: [{ type: 'text', text: summary }] }, ...messages.slice(cut)], removed: older.length };
}

function describeCalls(messages: Anthropic.MessageParam[]): string[] {
  const results = new Map<string, string>();
  for (const m of messages) {
    if (m.role !== 'user' || !Array.isArray(m.content)) continue;
    for (const b of m.content) {
      if (b.type !== 'tool_result') continue;
      const text = typeof b.content === 'string' ? b.content : (b.content ?? []).map((c) => ('text' in c ? c.text : '')).join(' ');
      results.set(b.tool_use_id, `${b.is_error ? 'error: ' : ''}${text.split('\n').find((l) => l.trim()) ?? ''}`);
    }
  }
  const lines: string[] = [];
  for (const m of messages) {
    if (m.role !== 'assistant' || !Array.isArray(m.content)) continue;
    for (const b of m.content) {
      if (b.type !== 'tool_use') continue;
      const input = JSON.stringify(b.input);
      lines.push(`- ${b.name} ${input.length > 80 ? input.slice(0, 80) + '…' : input} → ${results.get(b.id) ?? '(no result)'}`.slice(0, CALL_LINE_MAX));
    }
  }
  return lines.length ? lines : ['(none)'];
}
