import Anthropic, { AnthropicError } from '@anthropic-ai/sdk';
import type { Usage } from '../shared/types.js';
import { ModelError, toModelError } from './errors.js';
import { parseModelSpec, SCRIPTED_MODEL, type ModelSpec } from './models.js';
import { costUsd } from './pricing.js';
import { buildMessageParams, type ModelRequest } from './request.js';
import { loadScript, ScriptError } from './script.js';
import { ROLE_HEADER, RUN_HEADER, SCRIPT_HEADER, startScriptedServer, TURN_HEADER, type ScriptedServer } from './scripted-server.js';
import { stallGuardedFetch, stallTimeoutsFromEnv, type StallTimeouts } from './stall.js';
import { replyOf } from './stream-reply.js';

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
}

const DEFAULT_TIMEOUT_MS = 10 * 60 * 1000;

let shared: Promise<ScriptedServer> | undefined;

/** The process's one scripted server, started on first use; it does not keep the process alive. */
export function sharedScriptedServer(): Promise<ScriptedServer> {
  shared ??= startScriptedServer({ unref: true }).catch((err: unknown) => {
    shared = undefined;
    throw err;
  });
  return shared;
}

/** Stops the shared scripted server (tests, orderly shutdown); the next scripted client starts a new one. */
export async function closeSharedScriptedServer(): Promise<void> {
  const server = shared;
  shared = undefined;
  if (server) await (await server).close();
}

function usageOf(message: Anthropic.Message): Usage {
  return {
    input: message.usage.input_tokens,
    output: message.usage.output_tokens,
    cacheRead: message.usage.cache_read_input_tokens ?? 0,
    cacheWrite: message.usage.cache_creation_input_tokens ?? 0,
  };
}

function billedOf(message: Anthropic.Message, priceAs: string, final: boolean): BilledReply {
  const usage = usageOf(message);
  return { message: message.id, usage, costUsd: costUsd(priceAs, usage), ...(final ? {} : { partial: true }) };
}

function toResult(message: Anthropic.Message, priceAs: string): ModelResult {
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
 * A client for one run. Retries are Temporal's, so the SDK's are off and every failure
 * comes back at once as a ModelError saying whether a retry can help.
 */
export async function createModelClient(opts: CreateModelClientOptions): Promise<ModelClient> {
  const env = opts.env ?? process.env;
  const timeout = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const parsed = parseModelSpec(opts.spec, opts.cwd);
  const guarded = stallGuardedFetch(opts.stall ?? stallTimeoutsFromEnv(env));
  const keyHeader = (key: string | undefined): Record<string, string> =>
    key ? { [IDEMPOTENCY_HEADER]: key.replace(/[^\x21-\x7e]/g, encodeURIComponent) } : {};

  if (parsed.kind === 'scripted') {
    try {
      await loadScript(parsed.scriptPath); // a bad script fails here, before the run's first turn
    } catch (err) {
      if (err instanceof ScriptError) throw new ModelError('script', err.message, { retryable: false, cause: err });
      throw err;
    }
    const server = await sharedScriptedServer();
    const sdk = new Anthropic({
      apiKey: 'scripted',
      baseURL: server.url,
      maxRetries: 0,
      timeout,
      fetch: guarded,
      // URI-encoded: header values must be Latin-1, paths and run ids need not be
      defaultHeaders: {
        [SCRIPT_HEADER]: encodeURIComponent(parsed.scriptPath),
        [RUN_HEADER]: encodeURIComponent(opts.runId),
      },
    });
    return {
      scripted: true,
      model: SCRIPTED_MODEL,
      async create(req, { signal, turn, idempotencyKey, role, onBilled }) {
        try {
          const message = await sdk.messages.create(buildMessageParams(SCRIPTED_MODEL, req), {
            signal: signal ?? null,
            headers: { [TURN_HEADER]: String(turn), ...(role === 'reviewer' ? { [ROLE_HEADER]: role } : {}), ...keyHeader(idempotencyKey) },
          });
          await onBilled?.(billedOf(message, SCRIPTED_MODEL, true));
          return toResult(message, SCRIPTED_MODEL);
        } catch (err) {
          throw toModelError(err);
        }
      },
    };
  }

  const apiKey = env.ANTHROPIC_API_KEY?.trim();
  if (!apiKey)
    throw new ModelError('auth', `no ANTHROPIC_API_KEY for model ${parsed.model}: set ANTHROPIC_API_KEY, or run offline with --model scripted:FILE`, {
      retryable: false,
    });
  const sdk = apiClient(apiKey, env.ANTHROPIC_BASE_URL?.trim() || null, timeout, opts.stall ?? stallTimeoutsFromEnv(env));
  const model = parsed.model;
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
