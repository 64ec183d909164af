/** The Anthropic provider: the Messages API through @anthropic-ai/sdk, streamed, with prompt caching. */
import Anthropic, { AnthropicError } from '@anthropic-ai/sdk';
import type { Usage } from '../shared/types.js';
import { ModelError, toModelError } from './errors.js';
import { costUsd } from './pricing.js';
import { keyHeader, type BilledReply, type ModelClient, type ModelResult } from './provider.js';
import { buildMessageParams } from './request.js';
import { stallGuardedFetch, type StallTimeouts } from './stall.js';
import { replyOf } from './stream-reply.js';

function usageOf(message: Anthropic.Message): Usage {
  return {
    input: message.usage.input_tokens,
    output: message.usage.output_tokens,
    cacheRead: message.usage.cache_read_input_tokens ?? 0,
    cacheWrite: message.usage.cache_creation_input_tokens ?? 0,
  };
}

export function billedOf(message: Anthropic.Message, priceAs: string, final: boolean): BilledReply {
  const usage = usageOf(message);
  return { message: message.id, usage, costUsd: costUsd(priceAs, usage), ...(final ? {} : { partial: true }) };
}

export function toResult(message: Anthropic.Message, priceAs: string): ModelResult {
  const usage = usageOf(message);
  return {
    content: message.content,
    stopReason: message.stop_reason,
    usage,
    model: message.model,
    costUsd: costUsd(priceAs, usage),
  };
}

/**
 * One SDK client per key, endpoint and timeout for the worker's life: a run asks for its client
 * every turn, and a fresh one each time meant a fresh HTTP agent (a new connection, and the SDK's
 * set-up) on the model request's path.
 */
const apiClients = new Map<string, Anthropic>();
const MAX_API_CLIENTS = 16;

function apiClient(apiKey: string, baseURL: string | null, timeout: number, stall: StallTimeouts): Anthropic {
  const key = JSON.stringify([apiKey, baseURL, timeout, stall.firstByteMs, stall.idleMs]);
  let sdk = apiClients.get(key);
  if (!sdk) {
    // null, not undefined: the SDK would otherwise read process.env behind an injected env
    sdk = new Anthropic({ apiKey, baseURL, maxRetries: 0, timeout, fetch: stallGuardedFetch(stall) });
    // a rotated key leaves its old client behind: keep the map from growing with rotations
    if (apiClients.size >= MAX_API_CLIENTS) apiClients.delete(apiClients.keys().next().value!);
    apiClients.set(key, sdk);
  }
  return sdk;
}

/**
 * A client for one run against the Messages API. Retries are Temporal's, so the SDK's are off and
 * every failure comes back at once as a ModelError saying whether a retry can help.
 */
export function anthropicClient(model: string, o: { env: NodeJS.ProcessEnv; timeout: number; stall: StallTimeouts }): ModelClient {
  const { env, timeout } = o;
  const apiKey = env.ANTHROPIC_API_KEY?.trim();
  if (!apiKey)
    throw new ModelError('auth', `no ANTHROPIC_API_KEY for model ${model}: set ANTHROPIC_API_KEY, or run offline with --model scripted:FILE`, {
      retryable: false,
    });
  const sdk = apiClient(apiKey, env.ANTHROPIC_BASE_URL?.trim() || null, timeout, o.stall);
  return {
    scripted: false,
    model,
    async create(req, { signal, idempotencyKey, onBilled }) {
      try {
        // streamed: the first byte comes at once and pings keep it alive, so a hang or a stall is
        // told apart from a long answer (the stall guard's two timeouts)
        const events = await sdk.messages.create(
          { ...buildMessageParams(model, req), stream: true },
          { signal: signal ?? null, headers: keyHeader(idempotencyKey) },
        );
        const message = await replyOf(events, signal, onBilled && ((m, final) => onBilled(billedOf(m, m.model || model, final))));
        return toResult(message, message.model || model);
      } catch (err) {
        // an event whose data is not JSON: the reply cannot be read, as the SDK's stream helper says
        throw toModelError(err instanceof SyntaxError ? new AnthropicError(`an event of the reply is not JSON: ${err.message}`) : err);
      }
    },
  };
}
