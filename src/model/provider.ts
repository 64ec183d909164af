/**
 * The one interface every model provider is behind: the request Kiln builds (ModelRequest, in the
 * Messages API's shape, which is how the conversation is kept and replayed) and the reply it needs
 * (content blocks, stop reason, usage and cost), with errors classified once as ModelError. A
 * provider that speaks another wire format maps both ways at its edge, so the agent loop, the
 * review and the ledger never learn which API answered.
 */
import type Anthropic from '@anthropic-ai/sdk';
import type { Usage } from '../shared/types.js';
import type { ModelSpec } from './models.js';
import type { ModelRequest } from './request.js';
import type { StallTimeouts } from './stall.js';

/**
 * Sent with every model call: the same logical call (run, attempt, turn) carries the same key on
 * every retry, so an API or proxy that takes idempotency keys answers a retry without billing it twice.
 */
export const IDEMPOTENCY_HEADER = 'idempotency-key';

export interface ModelResult {
  /** pass back unchanged as the assistant message (thinking blocks included: they are bound to the conversation) */
  content: Anthropic.ContentBlock[];
  stopReason: string | null;
  usage: Usage;
  model: string;
  costUsd: number;
}

/** Who a call is for: the coder's turns, or the independent review (the scripted server answers each from its own list). */
export type ModelRole = 'coder' | 'reviewer';
/** A reply the API billed, told as soon as its usage is known (before it is read whole, or saved). */
export interface BilledReply {
  /** the API's message id: a reply served again for the same idempotency key carries the same one */
  message: string;
  usage: Usage;
  costUsd: number;
  /** the stream broke after message_start: the usage it had said by then */
  partial?: boolean;
}

export interface ModelClient {
  /** answers come from a script, not a model */
  readonly scripted: boolean;
  /** the model id sent ('scripted' for a script) */
  readonly model: string;
  /**
   * One Messages API call. `turn` is the workflow's durable turn counter (the scripted
   * server answers turn N with step N). Throws ModelError, or the SDK's APIUserAbortError
   * when `signal` aborts.
   */
  create(
    req: ModelRequest,
    opts: { signal?: AbortSignal; turn: number; idempotencyKey?: string; role?: ModelRole; onBilled?: (billed: BilledReply) => Promise<void> },
  ): Promise<ModelResult>;
}

export interface CreateModelClientOptions {
  spec: ModelSpec;
  runId: string;
  env?: NodeJS.ProcessEnv;
  /** per-request timeout; the SDK's own 10-minute default, set explicitly so large max_tokens are not refused */
  timeoutMs?: number;
  /** relative script paths are resolved from here */
  cwd?: string;
  /** first-byte and idle-stream limits; from KILN_MODEL_FIRST_BYTE_MS / KILN_MODEL_IDLE_MS by default */
  stall?: StallTimeouts;
  /** the wire a scripted model speaks: the Messages API (default), or Chat Completions through the OpenAI provider (KILN_SCRIPTED_WIRE) */
  scriptedWire?: 'anthropic' | 'openai';
}

/** The SDK's own 10-minute default, set explicitly so large max_tokens are not refused. */
export const DEFAULT_TIMEOUT_MS = 10 * 60 * 1000;

/** An idempotency key as a header: URI-encoded, since header values must be printable ASCII. */
export function keyHeader(key: string | undefined): Record<string, string> {
  return key ? { [IDEMPOTENCY_HEADER]: key.replace(/[^\x21-\x7e]/g, encodeURIComponent) } : {};
}
