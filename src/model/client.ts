import Anthropic from '@anthropic-ai/sdk';
import { anthropicClient, billedOf, toResult } from './anthropic-client.js';
import { ModelError, toModelError } from './errors.js';
import { parseModelSpec, SCRIPTED_MODEL } from './models.js';
import { chatEndpoint, openAIClient } from './openai-client.js';
import { DEFAULT_TIMEOUT_MS, keyHeader, type CreateModelClientOptions, type ModelClient, type ModelRole } from './provider.js';
import { costUsd } from './pricing.js';
import { settingsFrom } from '../settings.js';
import { buildMessageParams } from './request.js';
import { loadScript, ScriptError } from './script.js';
import { ROLE_HEADER, RUN_HEADER, SCRIPT_HEADER, startScriptedServer, TURN_HEADER, type ScriptedServer } from './scripted-server.js';
import { stallGuardedFetch, stallTimeoutsFromEnv } from './stall.js';

export type { BilledReply, CreateModelClientOptions, ModelClient, ModelResult, ModelRole } from './provider.js';
export { IDEMPOTENCY_HEADER } from './provider.js';

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

/**
 * A client for one run. Retries are Temporal's, so the SDK's are off and every failure
 * comes back at once as a ModelError saying whether a retry can help.
 */
export async function createModelClient(opts: CreateModelClientOptions): Promise<ModelClient> {
  const env = opts.env ?? process.env;
  const timeout = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const parsed = parseModelSpec(opts.spec, opts.cwd);
  const stall = opts.stall ?? stallTimeoutsFromEnv(env);

  if (parsed.kind === 'scripted') {
    try {
      await loadScript(parsed.scriptPath); // a bad script fails here, before the run's first turn
    } catch (err) {
      if (err instanceof ScriptError) throw new ModelError('script', err.message, { retryable: false, cause: err });
      throw err;
    }
    const server = await sharedScriptedServer();
    // URI-encoded: header values must be Latin-1, paths and run ids need not be
    const headers = { [SCRIPT_HEADER]: encodeURIComponent(parsed.scriptPath), [RUN_HEADER]: encodeURIComponent(opts.runId) };
    const perCall = (turn: number, role?: ModelRole) => ({ [TURN_HEADER]: String(turn), ...(role === 'reviewer' ? { [ROLE_HEADER]: role } : {}) });
    if ((opts.scriptedWire ?? settingsFrom(env).scriptedWire) === 'openai')
      return openAIClient(
        SCRIPTED_MODEL,
        {
          baseURL: `${server.url}/v1`,
          apiKey: 'scripted',
          keyName: 'the scripted model',
          api: 'chat',
          label: SCRIPTED_MODEL,
          openai: false,
          price: costUsd,
          scripted: { headers, perCall },
        },
        { timeout, stall },
      );
    const sdk = new Anthropic({
      apiKey: 'scripted',
      baseURL: server.url,
      maxRetries: 0,
      timeout,
      fetch: stallGuardedFetch(stall),
      defaultHeaders: headers,
    });
    return {
      scripted: true,
      model: SCRIPTED_MODEL,
      async create(req, { signal, turn, idempotencyKey, role, onBilled }) {
        try {
          const message = await sdk.messages.create(buildMessageParams(SCRIPTED_MODEL, req), {
            signal: signal ?? null,
            headers: { ...perCall(turn, role), ...keyHeader(idempotencyKey) },
          });
          await onBilled?.(billedOf(message, SCRIPTED_MODEL, true));
          return toResult(message, SCRIPTED_MODEL);
        } catch (err) {
          throw toModelError(err);
        }
      },
    };
  }

  if (parsed.provider === 'anthropic') return anthropicClient(parsed.model, { env, timeout, stall });
  return openAIClient(parsed.model, chatEndpoint(parsed, env), { timeout, stall });
}
