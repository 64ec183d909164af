/**
 * The OpenAI provider, through the official openai package: `openai:MODEL` over OpenAI's Responses
 * API, `openai-compatible@URL:MODEL` over Chat Completions (what servers that copy the API speak).
 * Streamed, as the Anthropic provider is, so the stall guard tells a hang from a long answer.
 */
import OpenAI from 'openai';
import { settingsFrom } from '../settings.js';
import type { Usage } from '../shared/types.js';
import { ModelError } from './errors.js';
import type { ParsedModelSpec } from './models.js';
import { buildChatParams } from './openai-request.js';
import { chatReplyOf } from './openai-stream.js';
import { buildResponsesParams, responsesReplyOf } from './openai-responses.js';
import { toModelErrorOpenAI } from './openai-errors.js';
import { openaiCostUsd } from './openai-pricing.js';
import { keyHeader, type BilledReply, type ModelClient, type ModelResult, type ModelRole } from './provider.js';
import { stallGuardedFetch, type StallTimeouts } from './stall.js';

type ApiSpec = Extract<ParsedModelSpec, { kind: 'api' }>;

export interface ChatEndpoint {
  baseURL: string;
  apiKey: string;
  /** the variable the key came from, named when the API refuses it */
  keyName: string;
  /** what the ledger and the review record call the model */
  label: string;
  /** true: OpenAI itself (max_completion_tokens, reasoning models' rules); false: a server that copies it */
  openai: boolean;
  /** OpenAI's own Responses API, or Chat Completions (what servers that copy OpenAI speak) */
  api: 'responses' | 'chat';
  price: (model: string, usage: Usage) => number;
  /** the scripted server: which script and run (sent on every request), and the turn and role of each */
  scripted?: { headers: Record<string, string>; perCall: (turn: number, role?: ModelRole) => Record<string, string> };
}

const NO_KEY = 'kiln-no-key';

/** Where an API model's calls go and with which key; a name the worker may not call is refused here, before any request. */
export function chatEndpoint(parsed: ApiSpec, env: NodeJS.ProcessEnv): ChatEndpoint {
  if (parsed.provider === 'openai') {
    const apiKey = env.OPENAI_API_KEY?.trim();
    if (!apiKey)
      throw new ModelError(
        'auth',
        `no OPENAI_API_KEY for model openai:${parsed.model}: set OPENAI_API_KEY on the worker, or run offline with --model scripted:FILE`,
        {
          retryable: false,
        },
      );
    const baseURL = env.OPENAI_BASE_URL?.trim() || 'https://api.openai.com/v1';
    return { baseURL, apiKey, keyName: 'OPENAI_API_KEY', label: `openai:${parsed.model}`, openai: true, api: 'responses', price: openaiCostUsd };
  }
  if (parsed.provider !== 'openai-compatible') throw new TypeError(`not a Chat Completions model: ${parsed.provider}`);
  const allowed = settingsFrom(env).openaiCompatibleUrls ?? [];
  if (!allowed.includes(parsed.baseURL))
    throw new ModelError(
      'permission',
      `this worker may not call ${parsed.baseURL}: its operator lists the OpenAI-compatible servers it may call in KILN_OPENAI_COMPATIBLE_URLS (now ${allowed.length ? allowed.join(', ') : 'none'})`,
      { retryable: false },
    );
  return {
    baseURL: parsed.baseURL,
    // a local server takes any key; the SDK wants one
    apiKey: env.OPENAI_COMPATIBLE_API_KEY?.trim() || NO_KEY,
    keyName: 'OPENAI_COMPATIBLE_API_KEY',
    label: `openai-compatible@${parsed.baseURL}:${parsed.model}`,
    openai: false,
    api: 'chat',
    // a server of one's own bills nothing Kiln can know: token budgets still hold, USD ones count 0
    price: () => 0,
  };
}

/** One SDK client per endpoint, key and timeouts for the worker's life, as the Anthropic provider keeps them. */
const sdks = new Map<string, OpenAI>();
const MAX_SDKS = 16;

function sdkFor(e: ChatEndpoint, timeout: number, stall: StallTimeouts): OpenAI {
  const key = JSON.stringify([e.baseURL, e.apiKey, timeout, stall.firstByteMs, stall.idleMs, e.scripted?.headers ?? null]);
  let sdk = sdks.get(key);
  if (!sdk) {
    // every option given: the SDK would otherwise read OPENAI_* from process.env behind an injected env
    sdk = new OpenAI({
      apiKey: e.apiKey,
      baseURL: e.baseURL,
      organization: null,
      project: null,
      maxRetries: 0,
      timeout,
      fetch: stallGuardedFetch(stall),
      ...(e.scripted ? { defaultHeaders: e.scripted.headers } : {}),
    });
    if (sdks.size >= MAX_SDKS) sdks.delete(sdks.keys().next().value!);
    sdks.set(key, sdk);
  }
  return sdk;
}

function billedOf(message: string, usage: Usage, cost: number): BilledReply {
  return { message, usage, costUsd: cost };
}

/** A client for one run over the endpoint's API. Retries are Temporal's: the SDK's are off. */
export function openAIClient(model: string, e: ChatEndpoint, o: { timeout: number; stall: StallTimeouts }): ModelClient {
  const sdk = sdkFor(e, o.timeout, o.stall);
  const none: Usage = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
  return {
    scripted: e.scripted !== undefined,
    model: e.label,
    async create(req, { signal, turn, idempotencyKey, role, onBilled }): Promise<ModelResult> {
      const options = { signal: signal ?? null, headers: { ...keyHeader(idempotencyKey), ...(e.scripted?.perCall(turn, role) ?? {}) } };
      const bill = onBilled && ((r: { id: string; usage?: Usage | undefined }) => onBilled(billedOf(r.id, r.usage ?? none, e.price(model, r.usage ?? none))));
      try {
        const reply =
          e.api === 'responses'
            ? await responsesReplyOf(await sdk.responses.create(buildResponsesParams(model, req), options), bill)
            : await chatReplyOf(await sdk.chat.completions.create(buildChatParams(model, req, { openai: e.openai }), options), bill);
        const usage = reply.usage ?? none;
        return { content: reply.content, stopReason: reply.stopReason, usage, model: reply.model || model, costUsd: e.price(model, usage) };
      } catch (err) {
        throw toModelErrorOpenAI(err, e.keyName);
      }
    },
  };
}
