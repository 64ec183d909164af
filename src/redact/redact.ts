import { knownSpans } from './known.js';
import { SECRET_PATTERNS, type SecretPattern } from './patterns.js';

export interface SecretSpan {
  start: number;
  end: number;
  kind: string;
}

function spansOf(text: string, pattern: SecretPattern, out: SecretSpan[]): void {
  const re = new RegExp(pattern.re.source, pattern.re.flags);
  for (let m = re.exec(text); m !== null; m = re.exec(text)) {
    if (m[0].length === 0) {
      re.lastIndex++;
      continue;
    }
    let start = m.index;
    let end = m.index + m[0].length;
    const secret = pattern.group ? m.groups?.secret : m[0];
    if (secret === undefined) continue;
    if (pattern.group) {
      // the group is the last thing its patterns capture before an optional closing quote
      const rel = m[0].lastIndexOf(secret);
      start = m.index + rel;
      end = start + secret.length;
    }
    if (pattern.accept && !pattern.accept(secret, m)) continue;
    out.push({ start, end, kind: pattern.kind });
  }
}

/** Where the secrets in `text` are (known values and shapes): non-overlapping and sorted. */
export function findSecrets(text: string): SecretSpan[] {
  const all: SecretSpan[] = knownSpans(text);
  for (const p of SECRET_PATTERNS) spansOf(text, p, all);
  return mergeSpans(all);
}

/** Overlapping spans become one, so no end of a longer secret survives a shorter match. */
export function mergeSpans(spans: SecretSpan[]): SecretSpan[] {
  spans.sort((a, b) => a.start - b.start || b.end - a.end);
  const kept: SecretSpan[] = [];
  for (const s of spans) {
    const last = kept[kept.length - 1];
    if (last && s.start < last.end) last.end = Math.max(last.end, s.end);
    else kept.push({ ...s });
  }
  return kept;
}

export function applySpans(text: string, spans: readonly SecretSpan[]): string {
  if (spans.length === 0) return text;
  let out = '';
  let at = 0;
  for (const s of spans) {
    out += text.slice(at, s.start) + `[REDACTED:${s.kind}]`;
    at = s.end;
  }
  return out + text.slice(at);
}

/**
 * Masks secrets as `[REDACTED:<kind>]`. Synchronous and pattern-based, so every
 * event, audit line and tool result can pass through it; see redactAsync for the
 * secretlint second pass.
 */
export function redact(text: string): string {
  return applySpans(text, findSecrets(text));
}
