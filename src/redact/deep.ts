import { redact } from './redact.js';

/**
 * Every string inside a JSON-like value, redacted (keys too). For what the model says and the
 * calls it makes: they are stored and sent back to the model on every later turn, so a secret it
 * quotes must not survive in them.
 */
export function redactDeep<T>(value: T): T {
  if (typeof value === 'string') return redact(value) as T;
  if (Array.isArray(value)) return value.map((v) => redactDeep(v)) as T;
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [redact(k), redactDeep(v)])) as T;
  }
  return value;
}
