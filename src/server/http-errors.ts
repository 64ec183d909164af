/** One JSON shape for every error the API returns: a code, a message saying what to fix, the field when one is wrong. */
import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { z } from 'zod';
import { UsageError } from '../shared/errors.js';

export class HttpError extends Error {
  constructor(
    readonly status: ContentfulStatusCode,
    readonly code: string,
    message: string,
    readonly field?: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

export function send(c: Context, e: HttpError): Response {
  return c.json({ error: e.code, message: e.message, ...(e.field ? { field: e.field } : {}), ...e.extra }, e.status);
}

export const notFound = (what: string) => new HttpError(404, 'not_found', `no ${what}`);

/** The first problem zod found, with its field as a dotted path. */
export function badInput(err: z.ZodError, where: string): HttpError {
  const i = err.issues[0]!;
  const field = i.path.join('.') || undefined;
  const keys = i.code === 'unrecognized_keys' ? (i as { keys?: string[] }).keys : undefined;
  if (keys?.length) return new HttpError(400, 'bad_request', `${where}: unknown field ${keys.join(', ')}`, keys[0]);
  return new HttpError(400, 'bad_request', `${where}${field ? ` field ${field}` : ''}: ${i.message}`, field);
}

/** The CLI's option checks name flags ("--max-wall 5x: …"); the API names the body's field. */
export function fromUsage(err: UsageError): HttpError {
  const m = /^--([a-z-]+)/.exec(err.message);
  const field = m ? m[1]!.replace(/-([a-z])/g, (_, ch: string) => ch.toUpperCase()) : undefined;
  const message = m ? err.message.replace(/^--[a-z-]+/, field!) : err.message;
  return new HttpError(400, 'bad_request', message.replace(/`kiln [^`]*`/g, 'the API'), field);
}
