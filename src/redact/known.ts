/**
 * Known-value redaction: the exact secrets this worker holds (the values in a repo's sensitive
 * files, the worker's own secret variables), masked wherever they appear, in the forms a command
 * or a model is likely to print them: as is, base64 (standard and URL-safe, at any alignment
 * inside a longer blob), URL-encoded and JSON-escaped. Shape rules cannot see a plain value such
 * as `DB_PASSWORD=canary-7f3a`; this can.
 *
 * One registry per process, not per run: a value registered for one run is masked in every run
 * on this worker. That only ever masks more, and it lets every existing `redact()` call honour
 * the known values without threading a per-run redactor through each one. The values stay in
 * this process's memory: nothing here is written to disk or sent to the Temporal server.
 */
import { isPlaceholder } from './patterns.js';

/**
 * Shorter values are not collected: "3000", "true" or "admin" would mask ordinary words all over
 * every log. 8 is where a value stops being a common word or number (the shape rules still catch
 * `password=abc` by its key).
 */
export const KNOWN_VALUE_MIN_CHARS = 8;

/** Names of environment variables that hold secrets (ANTHROPIC_API_KEY, GITHUB_TOKEN, DB_PASSWORD…). */
export const SECRET_ENV_NAME =
  /(?:^|_)(?:KEY|TOKEN|SECRET|SECRETS|PASSWORD|PASSWD|PASS|PWD|CREDENTIALS?|AUTH|PAT|PRIVATE|COOKIE|SESSION|DSN)(?:_|$)|API_?KEY|ACCESS_?KEY/i;

// under a key that is not secret-named: a word or dashed words ("production", "us-east"), or a
// URL with no user-info or query (an API endpoint); with either, the shape rules still apply
const PLAIN_WORDS = /^[A-Za-z]+(?:[-_.][A-Za-z]+)*$/;
const PLAIN_URL = /^[a-z][a-z0-9+.-]*:\/\/[^\s@?#]+$/i;

/** Whether a value found in a sensitive file is worth masking everywhere. */
export function isKnownSecretCandidate(value: string, key = ''): boolean {
  const v = value.trim();
  if (v.length < KNOWN_VALUE_MIN_CHARS || isPlaceholder(v)) return false;
  return SECRET_ENV_NAME.test(key) || !(PLAIN_WORDS.test(v) || PLAIN_URL.test(v));
}

// secret-sounding names that hold socket paths, bus addresses and the shell's working
// directory (PWD: "print working directory", not a password), not secrets
const NOT_SECRET_ENV = /^(?:PWD|OLDPWD|SSH_AUTH_SOCK|GPG_AGENT_INFO|.*_SESSION_BUS_ADDRESS|XDG_SESSION_.*|.*_SESSION_(?:ID|TYPE|DESKTOP|CLASS))$/;

/** The secret variables of an environment (the worker's own). */
export function secretEnvValues(env: NodeJS.ProcessEnv): string[] {
  return Object.entries(env)
    .filter(([k, v]) => v !== undefined && SECRET_ENV_NAME.test(k) && !NOT_SECRET_ENV.test(k) && isKnownSecretCandidate(v, k))
    .map(([, v]) => v!.trim());
}

/**
 * Values in a sensitive file: `KEY=VALUE` / `KEY: VALUE` lines (dotenv, .npmrc, .pgpass's last
 * field, YAML), string values of JSON (service-account files), and a file that is one bare token.
 */
export function valuesInSecretFile(text: string): string[] {
  const out: string[] = [];
  const push = (v: string, k = '') => {
    const unq = v.trim().replace(/^(["'`])(.*)\1$/, '$2');
    if (isKnownSecretCandidate(unq, k)) out.push(unq);
  };
  const trimmed = text.trim();
  if (trimmed.startsWith('{')) {
    try {
      walkJson(JSON.parse(trimmed), '', push);
      return out;
    } catch {
      /* not JSON after all: read it as lines */
    }
  }
  const lines = trimmed.split(/\r?\n/);
  if (lines.length === 1 && !/[=:\s]/.test(trimmed)) push(trimmed, 'TOKEN');
  for (const line of lines) {
    const m = /^\s*(?:export\s+)?([A-Za-z_][\w.-]*)\s*[=:]\s*(.+?)\s*$/.exec(line);
    if (m) push(m[2]!.replace(/\s+#.*$/, ''), m[1]!);
    else if (/^[^#\s][^:]*(?::[^:]*){4}$/.test(line)) push(line.split(':').pop()!, 'PASSWORD'); // .pgpass
  }
  return out;
}

function walkJson(v: unknown, key: string, push: (v: string, k: string) => void): void {
  if (typeof v === 'string') push(v, key);
  else if (Array.isArray(v)) v.forEach((x) => walkJson(x, key, push));
  else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) walkJson(x, k, push);
}

/** A value's printed forms, each one masked where it appears. */
export function encodingsOf(value: string): string[] {
  const forms = new Set<string>([value]);
  const bytes = Buffer.from(value, 'utf8');
  for (let k = 0; k < 3; k++) {
    // inside a longer base64 blob the value may start at any byte offset: the characters
    // that mix the value's bits with its neighbours' are dropped from each end
    const enc = Buffer.concat([Buffer.alloc(k), bytes])
      .toString('base64')
      .replace(/=+$/, '');
    const head = [0, 2, 3][k]!;
    const tail = (k + bytes.length) % 3 === 0 ? 0 : 1;
    const core = enc.slice(head, enc.length - tail);
    if (core.length >= KNOWN_VALUE_MIN_CHARS) {
      forms.add(core);
      forms.add(core.replace(/\+/g, '-').replace(/\//g, '_'));
    }
  }
  forms.add(bytes.toString('base64'));
  forms.add(encodeURIComponent(value));
  forms.add(JSON.stringify(value).slice(1, -1));
  return [...forms].filter((f) => f.length >= KNOWN_VALUE_MIN_CHARS);
}

const known = new Set<string>();
let matcher: RegExp | null = null;

/** Adds values to this process's known secrets; returns how many were new. */
export function registerKnownSecrets(values: Iterable<string>): number {
  let added = 0;
  for (const v of values) {
    for (const form of encodingsOf(v)) {
      if (!known.has(form)) {
        known.add(form);
        added++;
      }
    }
  }
  if (added) {
    // longest first, so a value's base64 form wins over a shorter value inside it
    const alts = [...known].sort((a, b) => b.length - a.length).map((f) => f.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
    matcher = new RegExp(alts.join('|'), 'g');
  }
  return added;
}

/** For tests: forget every registered value. */
export function clearKnownSecrets(): void {
  known.clear();
  matcher = null;
}

export function knownSecretCount(): number {
  return known.size;
}

export function knownSpans(text: string): Array<{ start: number; end: number; kind: string }> {
  if (!matcher || !text) return [];
  const out: Array<{ start: number; end: number; kind: string }> = [];
  matcher.lastIndex = 0;
  for (let m = matcher.exec(text); m !== null; m = matcher.exec(text)) out.push({ start: m.index, end: m.index + m[0].length, kind: 'known-value' });
  return out;
}
