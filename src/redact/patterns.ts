/**
 * The secret shapes Kiln redacts synchronously. Most are taken from the rules of
 * @secretlint/secretlint-rule-preset-recommend (v11) and loosened where the preset
 * only knows one length of a token family; the rest cover what the preset misses
 * (JWTs, `password=` style assignments, Stripe keys, whole PEM blocks).
 *
 * A pattern either masks its whole match or, with `group`, only the named group
 * `secret` (so `DB_PASSWORD=` stays readable and only the value goes).
 */
export interface SecretPattern {
  kind: string;
  re: RegExp;
  /** mask only the named group `secret` instead of the whole match */
  group?: boolean;
  /** last word on a match: false keeps it (placeholders, code) */
  accept?: (secret: string, match: RegExpExecArray) => boolean;
}

// Values that document where a secret goes rather than being one.
const PLACEHOLDER =
  /^(?:<[^>]*>|\$\{[^}]*\}|\$\(.*\)|\$[A-Za-z_][A-Za-z0-9_]*|\{\{.*\}\}|%[A-Za-z_]+%|\*+|x{3,}|X{3,}|\.{3,}|null|none|nil|undefined|true|false|changeme|change[-_]?me|example|placeholder|your[-_].*|my[-_]?(?:password|secret|token)|password|secret|token|redacted|\[REDACTED.*|<redacted>)$/i;

/** True when an assigned value is a template, a reference or an obvious stand-in, not a secret. */
export function isPlaceholder(value: string): boolean {
  const v = value.replace(/^["'`]|["'`]$/g, '');
  return v.length < 3 || PLACEHOLDER.test(v) || v.startsWith('[REDACTED');
}

// A dotted identifier or a call is code (`token = req.headers.authorization`), not a literal.
const CODE_LIKE = /^(?:[A-Za-z_$][\w$]*\.)+[A-Za-z_$][\w$]*$|[()]/;

const KEY_WORDS =
  '(?:password|passwd|passphrase|pwd|secret|secret[_-]?key|client[_-]?secret|token|access[_-]?token|auth[_-]?token|refresh[_-]?token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|credentials?)';
// Key: letters/digits/_/-/. ending with one of the key words (DB_PASSWORD, github.token, X-Api-Key).
const KEY = `[A-Za-z0-9_.-]*?${KEY_WORDS}`;
// A key starts at a non-key character, or right after a JSON/C escape (`\npassword=…` in a JSON string).
const KEY_START = '(?:(?<![A-Za-z0-9_.-])|(?<=\\\\[ntr]))';

export const SECRET_PATTERNS: SecretPattern[] = [
  {
    kind: 'private-key',
    // A whole block; an unterminated block is masked to the end of the text because
    // what follows BEGIN is key material whether or not END ever arrives.
    re: /-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----|$(?![\s\S]))/g,
  },
  { kind: 'anthropic-key', re: /sk-ant-(?:api|admin|oat|sid)\d{2}-[A-Za-z0-9_-]{20,}/g },
  { kind: 'anthropic-key', re: /sk-ant-[A-Za-z0-9_-]{32,}/g },
  { kind: 'openai-key', re: /sk-(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{20,}/g },
  // legacy OpenAI keys: sk- and 48 alphanumerics (T3BlbkFJ inside); sk_live/ sk_test are Stripe's
  { kind: 'openai-key', re: /\bsk-[A-Za-z0-9]{32,}\b/g },
  { kind: 'stripe-key', re: /(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}\b/g },
  { kind: 'stripe-key', re: /whsec_[A-Za-z0-9]{24,}\b/g },
  { kind: 'github-token', re: /(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,255}\b/g },
  { kind: 'github-token', re: /github_pat_[A-Za-z0-9_]{22,255}\b/g },
  { kind: 'gitlab-token', re: /glpat-[A-Za-z0-9_-]{20,}\b/g },
  { kind: 'slack-token', re: /(?:xoxb|xoxp|xapp|xoxa|xoxo|xoxr|xoxe)-(?:\d-)?(?:[A-Za-z0-9]{1,40}-)+[A-Za-z0-9]{1,40}\b/g },
  { kind: 'slack-webhook', re: /https:\/\/hooks\.slack\.com\/services\/T[A-Za-z0-9]{1,40}\/B[A-Za-z0-9]{1,40}\/[A-Za-z0-9]{1,40}/g },
  // base64 runs (image data) are full of capitals and digits: require a non-base64 boundary
  { kind: 'aws-access-key', re: /(?<![A-Za-z0-9+/])(?:A3T[A-Z0-9]|AKIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9+/=])/g },
  {
    kind: 'aws-secret-key',
    re: /aws_?(?:secret)?_?(?:access)?_?key["']?\s*[:=]\s*["']?(?<secret>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])/gi,
    group: true,
  },
  { kind: 'google-api-key', re: /AIza[0-9A-Za-z_-]{35}\b/g },
  { kind: 'npm-token', re: /npm_[A-Za-z0-9]{36}\b/g },
  { kind: 'npm-token', re: /_authToken=(?<secret>[^\s$][^\s]*)/g, group: true },
  { kind: 'sendgrid-key', re: /(?<![A-Za-z])SG\.[\w-]{16,128}\.[\w-]{16,128}/g },
  { kind: 'shopify-token', re: /(?:shppa|shpca|shpat|shpss)_[a-fA-F0-9]{32,64}\b/g },
  { kind: 'linear-key', re: /lin_api_[A-Za-z0-9_]{32,128}\b/g },
  { kind: '1password-token', re: /ops_ey[A-Za-z0-9+/=]{100,1280}/g },
  // header.payload.signature, the first two base64url JSON objects (they start with `{"` = eyJ)
  { kind: 'jwt', re: /eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*/g },
  {
    // an opaque credential after an auth scheme: `Authorization: Bearer …`, `-H "Authorization: token …"`
    kind: 'bearer-token',
    re: /(?:authorization["']?\s*[:=]\s*["']?(?:bearer|token|basic|digest)|\bbearer)\s+(?<secret>[A-Za-z0-9._~+/-]{12,}=*)/gi,
    group: true,
    accept: (s) => !isPlaceholder(s) && !/^(?:tokens?|token_here|authentication)$/i.test(s),
  },
  {
    kind: 'url-password',
    re: /\b[a-zA-Z][a-zA-Z0-9+.-]{1,20}:\/\/[^\s:/?#@'"]{1,256}:(?<secret>[^\s/?#@'"]{1,256})@/g,
    group: true,
    accept: (s) => !isPlaceholder(s),
  },
  {
    // env/ini/CLI form: KEY=value with no spaces around '='; `export KEY=...` and `--password=...` too
    kind: 'password-assignment',
    re: new RegExp(`${KEY_START}${KEY}=(?<q>["']?)(?<secret>[^\\s"'\`;&|]+)\\k<q>`, 'gi'),
    group: true,
    // `<` opens a stand-in that the unquoted form cuts at its first space: `password=<your password>`
    accept: (s) => !isPlaceholder(s) && !CODE_LIKE.test(s) && !s.startsWith('<'),
  },
  {
    // quoted value after ':' or '=' (JSON, YAML, TOML, code string literals)
    kind: 'password-assignment',
    re: new RegExp(`${KEY_START}["']?${KEY}["']?[ \\t]*[:=][ \\t]*(?<q>["'])(?<secret>[^"'\\r\\n]+)\\k<q>`, 'gi'),
    group: true,
    accept: (s) => !isPlaceholder(s),
  },
  {
    // YAML block form: `  password: hunter2` at the start of a line, value unquoted
    kind: 'password-assignment',
    re: new RegExp(`^[ \\t-]*${KEY}:[ \\t]+(?<secret>[^\\s"'#{}\\[\\]][^\\s#]*)[ \\t]*$`, 'gim'),
    group: true,
    accept: (s) => !isPlaceholder(s) && !CODE_LIKE.test(s),
  },
];
