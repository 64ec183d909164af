/** The openai package's errors as Kiln's ModelError classes (errors.ts decides the classes for every provider). */
import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError, OpenAIError } from 'openai';
import { ModelError, QUOTA, SCRIPT_ERROR_TYPE, statusError } from './errors.js';
import { findStall } from './stall.js';

/** The message the API gave (its error object's, when it sent one), bounded. */
function detail(err: APIError): string {
  const body = err.error as { message?: unknown } | undefined;
  return (typeof body?.message === 'string' ? body.message : err.message).slice(0, 500);
}

/** OpenAI says insufficient_quota (a 429) for an account out of credit or over its budget: no wait fixes it. */
function isQuota(err: APIError): boolean {
  return QUOTA.test(`${err.code ?? ''} ${err.type ?? ''} ${detail(err)}`);
}

/**
 * Like errors.ts's toModelError, for the openai package: an abort and errors that are not the
 * SDK's pass through; a stall, a lost connection, an unreadable reply and the retryable statuses
 * are retried by Temporal; a bad request, a bad key or an unknown model are not. OpenAI's overload
 * is a 503.
 */
export function toModelErrorOpenAI(err: unknown, keyName: string): unknown {
  const stall = findStall(err);
  if (stall) return new ModelError('timeout', stall.message, { retryable: true, cause: stall });
  if (err instanceof ModelError || err instanceof APIUserAbortError) return err;
  // an event whose data is not JSON: the reply cannot be read
  if (err instanceof SyntaxError || (err instanceof OpenAIError && !(err instanceof APIError)))
    return new ModelError('server', `the model API sent a reply Kiln could not read: ${err.message.slice(0, 300)}`, { retryable: true, cause: err });
  if (!(err instanceof APIError)) return err;
  if (err instanceof APIConnectionTimeoutError) return new ModelError('timeout', 'the model API did not answer in time', { retryable: true, cause: err });
  if (err instanceof APIConnectionError) return new ModelError('connection', `could not reach the model API: ${err.message}`, { retryable: true, cause: err });
  // an error event inside a stream that had already said 200: the server failed mid-reply
  if (err.status === undefined) return new ModelError('server', `the model API failed during its reply: ${detail(err)}`, { retryable: true, cause: err });
  if (err.status === 400 && err.type === (SCRIPT_ERROR_TYPE as string))
    return new ModelError('script', detail(err), { retryable: false, status: 400, cause: err });
  return statusError({ status: err.status, headers: err.headers, detail: detail(err), quota: isQuota(err), keyName, overloadStatus: 503, cause: err });
}
