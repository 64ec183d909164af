/**
 * Idempotency-Key without a table of its own: the key names the run (its workflow id is a hash of
 * tenant and key), and the run keeps the hash of the body that started it. The same key and body
 * find the same run; another body under the same key is refused. Temporal's one-start-per-id
 * settles races.
 */
import { createHash } from 'node:crypto';
import { HttpError } from './http-errors.js';

const KEY_RE = /^[\x21-\x7e]{1,200}$/;

export function runIdForKey(tenant: string, key: string): string {
  if (!KEY_RE.test(key)) throw new HttpError(400, 'bad_request', 'Idempotency-Key: 1 to 200 printable ASCII characters, no spaces', 'Idempotency-Key');
  return `api-${createHash('sha256').update(`${tenant}\0${key}`).digest('hex').slice(0, 24)}`;
}

/** Key order does not change the hash: {"a":1,"b":2} and {"b":2,"a":1} are the same body. */
export function bodyHash(body: unknown): string {
  const sorted = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(sorted)
      : v && typeof v === 'object'
        ? Object.fromEntries(
            Object.keys(v)
              .sort()
              .map((k) => [k, sorted((v as Record<string, unknown>)[k])]),
          )
        : v;
  return createHash('sha256')
    .update(JSON.stringify(sorted(body)))
    .digest('hex');
}

export function conflict(key: string): HttpError {
  return new HttpError(
    409,
    'idempotency_conflict',
    `Idempotency-Key ${key} was used with another request body: use a new key for a new run`,
    'Idempotency-Key',
  );
}
