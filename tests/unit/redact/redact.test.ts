import { describe, expect, it } from 'vitest';
import { redact, redactAsync } from '../../../src/redact/index.js';

const a = (n: number, c = 'a') => c.repeat(n);
// Built from parts so this file does not itself look like a leaked key to scanners.
const PEM = [
  '-----BEGIN RSA PRIVATE KEY-----',
  'MIIEpAIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF0qJ0ZnYj1d8Nk6Q9Tr3Rsd2aF1B',
  'q2h5Q0fJ8s1oQe3u9Yd6Y8d0x1Jb1xvQ0C8m3f9s0Z2Xb2dGkz6mQ8v7Ht0oP1aa',
  '-----END RSA PRIVATE KEY-----',
].join('\n');
const JWT = 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U';

// [kind, text, the secret that must vanish]
const positives: Array<[string, string, string]> = [
  ['aws-access-key', 'key id AKIAZ3MSXT7QJ4K2N5PL here', 'AKIAZ3MSXT7QJ4K2N5PL'],
  ['aws-secret-key', 'aws_secret_access_key = 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', 'wJalrXUtnFEMIK7MDENGbPxRfiCYzq8h2k3m4n5p'],
  ['github-token', 'GH=ghp_' + a(36, 'B'), 'ghp_' + a(36, 'B')],
  ['github-token', 'fine-grained github_pat_11ABCDEFG0_' + a(59, 'x'), 'github_pat_11ABCDEFG0_' + a(59, 'x')],
  ['slack-token', 'xoxb-1234567890-1234567890123-abcdefghijklmnopqrstuvwx', 'xoxb-1234567890'],
  ['stripe-key', 'stripe: sk_live_' + a(24, 'Z'), 'sk_live_' + a(24, 'Z')],
  ['anthropic-key', 'ANTHROPIC_API_KEY=sk-ant-api03-' + a(93) + 'AA', 'sk-ant-api03-'],
  ['anthropic-key', 'header x-api-key: sk-ant-api03-' + a(40, 'Q'), 'sk-ant-api03-'],
  ['openai-key', 'key sk-proj-' + a(40, 'k') + ' used', 'sk-proj-'],
  ['openai-key', 'legacy sk-' + a(20, 'A') + 'T3BlbkFJ' + a(20, 'b'), 'T3BlbkFJ'],
  ['private-key', `before\n${PEM}\nafter`, 'MIIEpAIBAAKCAQEA'],
  ['jwt', `Authorization: Bearer ${JWT}`, JWT],
  ['url-password', 'git clone https://bot:s3cr3tPass@github.com/org/repo', 's3cr3tPass'],
  ['url-password', 'DATABASE_URL=postgres://app:pgpass99@db:5432/app', 'pgpass99'],
  ['password-assignment', 'DB_PASSWORD=hunter22', 'hunter22'],
  ['password-assignment', 'export API_KEY="abc123def456"', 'abc123def456'],
  ['password-assignment', '{"client_secret": "cs-998877"}', 'cs-998877'],
  ['password-assignment', 'database:\n  password: pa55word\n', 'pa55word'],
  ['password-assignment', "token = 'tok_live_998877'", 'tok_live_998877'],
  ['password-assignment', 'mysql --password=rootroot1 -u root', 'rootroot1'],
  ['npm-token', '//registry.npmjs.org/:_authToken=npm_' + a(36, 'n'), 'npm_' + a(36, 'n')],
  ['google-api-key', 'maps AIza' + a(35, 'S'), 'AIza' + a(35, 'S')],
];

describe('redact: positives', () => {
  it.each(positives)('%s: %s', (kind, text, secret) => {
    const out = redact(text);
    expect(out).toContain(`[REDACTED:${kind}]`);
    expect(out).not.toContain(secret);
  });

  it('keeps the key name readable and masks only the value', () => {
    expect(redact('DB_PASSWORD=hunter22\n')).toBe('DB_PASSWORD=[REDACTED:password-assignment]\n');
    expect(redact('https://bot:s3cr3tPass@github.com/x')).toBe('https://bot:[REDACTED:url-password]@github.com/x');
  });

  it('masks a whole PEM block, and an unterminated one to the end', () => {
    expect(redact(`a\n${PEM}\nb`)).toBe('a\n[REDACTED:private-key]\nb');
    const open = PEM.split('\n').slice(0, 2).join('\n');
    expect(redact(`a\n${open}`)).toBe('a\n[REDACTED:private-key]');
  });
});

// Each must come back unchanged.
const nearMisses: Array<[string, string]> = [
  ['git commit sha', 'commit 9fceb02d0ae598e95dc970b74767f19372d61af8'],
  ['sha256', 'sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'],
  ['uuid', 'request 123e4567-e89b-12d3-a456-426614174000 failed'],
  ['data uri', 'src="data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="'],
  ['base64 blob with AKIA inside', 'QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo+AKIAQUJDREVGR0hJSktMTk9QUVJTVFVWV1hZWg=='],
  ['empty password', 'PASSWORD=\nNEXT=1'],
  ['placeholder', 'password=<your password>'],
  ['template', 'DB_PASSWORD=${DB_PASSWORD}'],
  ['shell reference', 'export TOKEN=$GITHUB_TOKEN'],
  ['code reading a token', 'const token = req.headers.authorization;'],
  ['code call', 'password = getPassword()'],
  ['yaml reference', 'token: ${{ secrets.NPM_TOKEN }}'],
  ['stars', 'password: ********'],
  ['tokenizer is not token', 'tokenizer=bert-base-uncased'],
  ['url without password', 'https://github.com/org/repo.git'],
  ['url placeholder', 'postgres://user:${PGPASSWORD}@localhost/db'],
  ['stripe publishable', 'pk_live_' + a(24, 'P')],
  ['plain prose', 'Set the password in the settings page; the token expires daily.'],
];

describe('redact: near misses stay', () => {
  it.each(nearMisses)('%s', (_name, text) => {
    expect(redact(text)).toBe(text);
  });
});

describe('redact: speed', () => {
  it('redacts 1 MB of mixed text (time printed, not asserted)', () => {
    const line = 'INFO 2024-01-01 request 123e4567-e89b-12d3-a456-426614174000 ok sha 9fceb02d0ae598e95dc970b74767f19372d61af8 DB_PASSWORD=hunter22\n';
    const text = line.repeat(Math.ceil(1_000_000 / line.length));
    const t0 = performance.now();
    const out = redact(text);
    const ms = performance.now() - t0;
    console.log(`redact: ${(text.length / 1e6).toFixed(2)} MB in ${ms.toFixed(1)} ms`);
    expect(out).not.toContain('hunter22');
  });
});

describe('redactAsync (secretlint second pass)', () => {
  it('masks what either pass finds and leaves near misses', async () => {
    const text = `mongodb://admin:mongopw1@db.example.com:27017\nghp_${a(36, 'C')}\nsha 9fceb02d0ae598e95dc970b74767f19372d61af8`;
    const out = await redactAsync(text);
    expect(out).not.toContain('mongopw1');
    expect(out).not.toContain('ghp_');
    expect(out).toContain('9fceb02d0ae598e95dc970b74767f19372d61af8');
  });
});
