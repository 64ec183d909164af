import { AnthropicError, APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from '@anthropic-ai/sdk';
import { KilnError } from '../shared/errors.js';
import { findStall } from './stall.js';

export type ModelErrorKind =
  'rate_limit' | 'overloaded' | 'server' | 'bad_request' | 'auth' | 'permission' | 'not_found' | 'connection' | 'timeout' | 'quota' | 'script';

/** Kinds a person must fix (the key, the account, the model name, the script): the CLI's exit 2. */
const INPUT_KINDS: ReadonlySet<ModelErrorKind> = new Set(['auth', 'permission', 'not_found', 'script']);

/** The only error a ModelClient throws (besides an abort): what went wrong and whether trying again can help. */
export class ModelError extends KilnError {
  override readonly name = 'ModelError';
  readonly kind: ModelErrorKind;
  readonly retryable: boolean;
  /** how long the API asked us to wait before trying again */
  declare readonly retryAfterMs?: number;
  readonly status?: number;
  override readonly exitCode: number;

  constructor(kind: ModelErrorKind, message: string, opts: { retryable: boolean; retryAfterMs?: number; status?: number; cause?: unknown }) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.kind = kind;
    this.retryable = opts.retryable;
    if (opts.retryAfterMs !== undefined) this.retryAfterMs = opts.retryAfterMs;
    if (opts.status !== undefined) this.status = opts.status;
    this.exitCode = !this.retryable && INPUT_KINDS.has(kind) ? 2 : 1;
  }

  /** The names the workflow's failure reasons and the eval's classifier already know. */
  override get failureType(): string {
    return this.retryable ? 'ModelRetryableError' : this.kind === 'script' ? 'ScriptError' : 'ModelFatalError';
  }

  /** The same error, its message prefixed (e.g. with the turn it happened in). */
  withContext(prefix: string): ModelError {
    return new ModelError(this.kind, `${prefix}: ${this.message}`, {
      retryable: this.retryable,
      cause: this,
      ...(this.retryAfterMs !== undefined ? { retryAfterMs: this.retryAfterMs } : {}),
      ...(this.status !== undefined ? { status: this.status } : {}),
    });
  }
}

/** The scripted server's error type for a script that does not match the run. */
export const SCRIPT_ERROR_TYPE = 'kiln_script_error';

/** `retry-after-ms` (non-standard, more precise) first, then `retry-after` in seconds or as a date. */
export function retryAfterMs(headers: Headers | undefined, now: number = Date.now()): number | undefined {
  const ms = Number.parseFloat(headers?.get('retry-after-ms') ?? '');
  if (Number.isFinite(ms) && ms >= 0) return Math.round(ms);
  const raw = headers?.get('retry-after');
  if (!raw) return undefined;
  const seconds = Number.parseFloat(raw);
  if (Number.isFinite(seconds) && seconds >= 0) return Math.round(seconds * 1000);
  const date = Date.parse(raw);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

function detail(err: APIError): string {
  return (err.apiMessage ?? err.message).slice(0, 500);
}

/**
 * A 429 that no wait can fix: the account's spend limit, quota or billing. Anthropic answers a
 * spend limit with 429 `rate_limit_error` and a message or error code naming it, so the text is
 * what tells it from a rate limit (measured: retrying it 8 times over 126 s only burns time).
 */
export const QUOTA = /spend[_ ]limit|enforced_spend_limit_reached|quota|billing|credit balance|insufficient[_ ]funds/i;

export function isQuotaError(err: APIError): boolean {
  const body = JSON.stringify((err as { error?: unknown }).error ?? '');
  return QUOTA.test(`${err.type ?? ''} ${detail(err)} ${body}`);
}

/**
 * Maps an SDK error to a ModelError. Retries belong to Temporal (the SDK's are off), so
 * this decides what is worth retrying: rate limits, overload, server errors and lost
 * connections are; a bad request, a bad key or a missing model are not. An abort (the
 * activity was cancelled) and errors that are not the SDK's pass through unchanged.
 */
export function toModelError(err: unknown): unknown {
  const stall = findStall(err);
  if (stall) return new ModelError('timeout', stall.message, { retryable: true, cause: stall });
  if (err instanceof AnthropicError && !(err instanceof APIError))
    return new ModelError('server', `the model API sent a reply Kiln could not read: ${err.message.slice(0, 300)}`, { retryable: true, cause: err });
  if (err instanceof ModelError || !(err instanceof APIError) || err instanceof APIUserAbortError) return err;
  if (err instanceof APIConnectionTimeoutError) return new ModelError('timeout', 'the model API did not answer in time', { retryable: true, cause: err });
  if (err instanceof APIConnectionError)
    return new ModelError('connection', `could not reach the model API: ${err.message}`, {
      retryable: true,
      cause: err,
    });

  if (err.status === 400 && err.type === (SCRIPT_ERROR_TYPE as string))
    return new ModelError('script', detail(err), { retryable: false, status: 400, cause: err });
  return statusError({
    status: err.status ?? 0,
    headers: err.headers,
    detail: detail(err),
    quota: isQuotaError(err),
    keyName: 'ANTHROPIC_API_KEY',
    cause: err,
  });
}

/** What an API's error reply said, as each provider's SDK reads it. */
export interface StatusReply {
  status: number;
  headers: Headers | undefined;
  /** the API's own message, bounded */
  detail: string;
  /** the reply names a spend limit, quota or billing (see QUOTA) */
  quota: boolean;
  /** the variable that holds this provider's key, named in a 401's message */
  keyName: string;
  /** a provider whose overload is a 503, besides Anthropic's 529 */
  overloadStatus?: number;
  cause: unknown;
}

/** An API's error reply as a ModelError: the same classes whichever provider sent it. */
export function statusError(r: StatusReply): ModelError {
  const { status, detail: text } = r;
  const wait = retryAfterMs(r.headers);
  // The API says outright whether a retry can help; that beats our reading of the status.
  const shouldRetry = r.headers?.get('x-should-retry');
  const retryable = (fallback: boolean) => (shouldRetry === 'true' ? true : shouldRetry === 'false' ? false : fallback);
  const make = (kind: ModelErrorKind, message: string, canRetry: boolean) =>
    new ModelError(kind, message, {
      retryable: retryable(canRetry),
      status,
      cause: r.cause,
      ...(wait !== undefined ? { retryAfterMs: wait } : {}),
    });

  if ((status === 429 || status === 402 || status === 403) && r.quota)
    return new ModelError(
      'quota',
      `the model API account is out of quota or over its spend limit (${status}): ${text}; raise the limit or wait for it to reset`,
      {
        retryable: false,
        status,
        cause: r.cause,
      },
    );
  if (status === 429) return make('rate_limit', `rate limited by the model API (429): ${text}`, true);
  if (status === 529 || status === r.overloadStatus) return make('overloaded', `the model API is overloaded (${status}): ${text}`, true);
  if (status === 408) return make('timeout', `the model API timed out the request (408): ${text}`, true);
  if (status === 409) return make('server', `the model API reported a conflict (409): ${text}`, true);
  if (status >= 500) return make('server', `the model API failed (${status}): ${text}`, true);
  if (status === 401) return make('auth', `the model API rejected the credentials (401): ${text}; check ${r.keyName}`, false);
  if (status === 402) return make('permission', `the model API wants payment (402): ${text}; check the account's billing`, false);
  if (status === 403) return make('permission', `the API key may not do this (403): ${text}`, false);
  if (status === 404) return make('not_found', `the model API does not know this model or endpoint (404): ${text}`, false);
  return make('bad_request', `the model API refused the request (${status}): ${text}`, false);
}
