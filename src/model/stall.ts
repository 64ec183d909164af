/**
 * First-byte and idle-stream timeouts for model calls. The SDK's only timeout covers the whole
 * request (10 minutes, so that a long answer is not cut); a server that hangs before its first
 * byte, or a stream that stops mid-way, would be abandoned only after minutes per attempt. This fetch
 * wrapper gives up on each of those separately, so an attempt dies in seconds, not minutes.
 */
import { settingsFrom } from '../settings.js';

export interface StallTimeouts {
  /** from sending the request until the response headers arrive */
  firstByteMs: number;
  /** between two chunks of the response body (the API streams `ping` events while it thinks) */
  idleMs: number;
}

/** Defaults: the streaming API answers with headers in a second or two and pings every ~15 s. */
export const DEFAULT_STALL_TIMEOUTS: StallTimeouts = { firstByteMs: 60_000, idleMs: 90_000 };

/** Read from the worker's environment: KILN_MODEL_FIRST_BYTE_MS, KILN_MODEL_IDLE_MS. */
export function stallTimeoutsFromEnv(env: NodeJS.ProcessEnv): StallTimeouts {
  return {
    firstByteMs: settingsFrom(env).modelFirstByteMs ?? DEFAULT_STALL_TIMEOUTS.firstByteMs,
    idleMs: settingsFrom(env).modelIdleMs ?? DEFAULT_STALL_TIMEOUTS.idleMs,
  };
}

/** The model API stopped answering; the message avoids "timed out" so the SDK keeps it as the cause. */
export class ModelStallError extends Error {
  override readonly name = 'ModelStallError';
  constructor(
    readonly which: 'first_byte' | 'idle',
    readonly ms: number,
  ) {
    super(which === 'first_byte' ? `no response from the model API within ${ms} ms of the request` : `the model API's response stalled: nothing for ${ms} ms`);
  }
}

/** The stall in an error's cause chain, if one is there (the SDK wraps what fetch throws). */
export function findStall(err: unknown): ModelStallError | undefined {
  for (let e = err, depth = 0; e && depth < 8; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof ModelStallError) return e;
  }
  return undefined;
}

export function stallGuardedFetch(t: StallTimeouts, base: typeof fetch = fetch): typeof fetch {
  return async (input, init) => {
    const ctl = new AbortController();
    const outer = init?.signal;
    if (outer?.aborted) ctl.abort(outer.reason);
    else outer?.addEventListener('abort', () => ctl.abort(outer.reason), { once: true });
    const stalled = (which: ModelStallError['which'], ms: number) => () => ctl.abort(new ModelStallError(which, ms));

    const first = setTimeout(stalled('first_byte', t.firstByteMs), t.firstByteMs);
    let res: Response;
    try {
      res = await base(input, { ...init, signal: ctl.signal });
    } catch (err) {
      throw findStall(ctl.signal.reason) ?? err;
    } finally {
      clearTimeout(first);
    }
    if (!res.body) return res;
    const reader = res.body.getReader();
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const idle = setTimeout(stalled('idle', t.idleMs), t.idleMs);
        try {
          const { done, value } = await reader.read();
          if (done) controller.close();
          else controller.enqueue(value);
        } catch (err) {
          controller.error(findStall(ctl.signal.reason) ?? err);
        } finally {
          clearTimeout(idle);
        }
      },
      cancel: (reason) => reader.cancel(reason),
    });
    return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
  };
}
