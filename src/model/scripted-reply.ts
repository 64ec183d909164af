import { createHash } from 'node:crypto';
import type Anthropic from '@anthropic-ai/sdk';
import type { Usage } from '../shared/types.js';
import { SCRIPTED_MODEL } from './models.js';
import type { ScriptStep } from './script.js';
import { estimateTokens } from '../shared/tokens.js';

/** A Message as the API returns it, plus the marker that says it came from a script. */
export type ScriptedMessage = Anthropic.Message & { kiln_scripted: true };

function digest(...parts: Array<string | number>): string {
  return createHash('sha256').update(parts.join('\u0000')).digest('hex');
}

/**
 * Ids depend only on run, turn and position, so a turn answered again (a retried activity,
 * a worker restarted mid-turn) yields the same tool_use ids and the workflow's record of
 * them stays valid.
 */
export function toolUseId(runId: string, turn: number, index: number): string {
  return `toolu_${digest(runId, turn, index).slice(0, 24)}`;
}

export function messageId(runId: string, turn: number): string {
  return `msg_${digest('message', runId, turn).slice(0, 24)}`;
}

/** `{{turn}}` in any string of a step becomes the turn number: one step can answer a hundred turns differently. */
export function withTurn<T>(value: T, turn: number): T {
  if (typeof value === 'string') return value.replaceAll('{{turn}}', String(turn)) as T;
  if (Array.isArray(value)) return value.map((v) => withTurn(v, turn)) as T;
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, withTurn(v, turn)])) as T;
  return value;
}

export function scriptedMessage(opts: { step: ScriptStep; runId: string; turn: number; usage: Omit<Usage, 'output'> }): ScriptedMessage {
  const { runId, turn } = opts;
  const step = withTurn(opts.step, turn);
  const content: Anthropic.ContentBlock[] = [];
  if (step.text !== undefined && step.text !== '') content.push({ type: 'text', text: step.text, citations: null });
  (step.tool_use ?? []).forEach((call, i) =>
    content.push({
      type: 'tool_use',
      id: toolUseId(runId, turn, i),
      name: call.name,
      input: call.input,
      caller: { type: 'direct' },
    }),
  );
  const stopReason = step.stop_reason ?? (step.tool_use?.length ? 'tool_use' : 'end_turn');
  return {
    id: messageId(runId, turn),
    type: 'message',
    role: 'assistant',
    model: SCRIPTED_MODEL,
    content,
    stop_reason: stopReason,
    stop_sequence: null,
    stop_details: null,
    container: null,
    diagnostics: null,
    usage: {
      input_tokens: opts.usage.input,
      output_tokens: Math.max(1, estimateTokens(content)),
      cache_creation_input_tokens: opts.usage.cacheWrite,
      cache_read_input_tokens: opts.usage.cacheRead,
      cache_creation: { ephemeral_5m_input_tokens: opts.usage.cacheWrite, ephemeral_1h_input_tokens: 0 },
      inference_geo: null,
      output_tokens_details: null,
      server_tool_use: null,
      service_tier: 'standard',
      speed: null,
    },
    kiln_scripted: true,
  };
}
