/**
 * The redaction side of the .env attack: a plain value from .env is no secret *shape*, so shape
 * rules let it through; known-value redaction masks it and its usual encodings.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createStreamRedactor, redact, redactAsync } from '../../../src/redact/index.js';
import { clearKnownSecrets, registerKnownSecrets, secretEnvValues, valuesInSecretFile } from '../../../src/redact/known.js';

const CANARY = 'canary-7f3a9e1c';
const DOTENV = `# local settings\nNODE_ENV=production\nPORT=3000\nDB_PASSWORD="${CANARY}"\nexport API_URL=https://api.example.com/v1\nSHORT=abc12\n`;

afterEach(() => clearKnownSecrets());

describe('known-value redaction', () => {
  it('attack: before registration the canary is printed as is (the shape rules cannot know it)', () => {
    expect(redact(`grep -rn canary .\n./.env:4:DB_PASS ${CANARY}`)).toContain(CANARY);
  });

  it('masks the exact value and its base64, URL-encoded and JSON-escaped forms', () => {
    registerKnownSecrets(valuesInSecretFile(DOTENV));
    const b64 = Buffer.from(CANARY).toString('base64');
    const inBlob = Buffer.from(`xx${CANARY}yyy`).toString('base64'); // the value at an odd offset in a blob
    const json = JSON.stringify({ v: 'q"uote' + CANARY });
    const out = redact(
      [`raw ${CANARY}`, `glued${CANARY}x`, `b64 ${b64}`, `blob ${inBlob}`, `url ${encodeURIComponent(CANARY + '/+')}`, `json ${json}`].join('\n'),
    );
    expect(out).not.toContain(CANARY);
    expect(out).not.toContain(b64.replace(/=+$/, ''));
    expect(out).not.toContain(Buffer.from(CANARY).toString('base64').slice(2, 14));
    expect(out).toContain('[REDACTED:known-value]');
    for (const line of out.split('\n')) expect(line).toContain('[REDACTED');
  });

  it('control: ordinary values of the same file stay readable (words, short values, URLs without credentials)', () => {
    registerKnownSecrets(valuesInSecretFile(DOTENV));
    const out = redact('NODE_ENV is production on port 3000 via https://api.example.com/v1 (abc12)');
    expect(out).toBe('NODE_ENV is production on port 3000 via https://api.example.com/v1 (abc12)');
  });

  it("collects the worker's secret variables by name, not its others", () => {
    const v = secretEnvValues({
      ANTHROPIC_API_KEY: 'plain-looking-key-123',
      GITHUB_TOKEN: 'tok-value-4567',
      HOME: '/root/somewhere',
      PATH: '/usr/bin:/bin',
      DB_PASSWORD: 'short',
    });
    expect(v.sort()).toEqual(['plain-looking-key-123', 'tok-value-4567']);
  });

  it("masks each model provider's key by its value, in the forms a model or a command prints it", () => {
    // keys with no shape the patterns know: only the known value can catch them
    const env = { OPENAI_API_KEY: 'opaque-openai-value-8c1d', OPENAI_COMPATIBLE_API_KEY: 'local-vllm-token-77', ANTHROPIC_API_KEY: 'opaque-anthropic-3f9a' };
    registerKnownSecrets(secretEnvValues(env));
    for (const key of Object.values(env)) {
      for (const form of [key, Buffer.from(key).toString('base64'), JSON.stringify(`Bearer ${key}`)]) {
        expect(redact(`Authorization: ${form}`)).not.toContain(form.replace(/^"Bearer |"$/g, ''));
      }
    }
  });

  it('PWD is the working directory, not a password: paths in outputs and logs stay readable', () => {
    // matched as "PWD" it masked every path under the worker's directory, stack traces included
    expect(secretEnvValues({ PWD: '/work/main', OLDPWD: '/home/someone/src', DB_PWD: 'hunter2-but-longer' })).toEqual(['hunter2-but-longer']);
  });

  it('reaches every redaction path: the stream redactor and the thorough async pass', async () => {
    registerKnownSecrets([CANARY]);
    const s = createStreamRedactor();
    const streamed = s.push(`line one ${CANARY.slice(0, 6)}`) + s.push(`${CANARY.slice(6)} end\n`) + s.end();
    expect(streamed).not.toContain(CANARY);
    expect(await redactAsync(`patch +SECRET_VALUE=${CANARY}`)).not.toContain(CANARY);
  });

  it('JSON credentials files and one-token files give their values', () => {
    expect(
      valuesInSecretFile(JSON.stringify({ type: 'service_account', private_key_id: 'a1b2c3d4e5f6a7b8', client_email: 'x@y.iam.gserviceaccount.com' })),
    ).toEqual(expect.arrayContaining(['a1b2c3d4e5f6a7b8', 'x@y.iam.gserviceaccount.com']));
    expect(valuesInSecretFile('ghx-0123456789abcdef\n')).toEqual(['ghx-0123456789abcdef']);
  });
});

describe('shape rules at the edges', () => {
  const token = 'ghp_' + 'A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8';
  it('attack: a token glued to a letter, digit or _, inside ANSI colour codes or after a JSON escape', () => {
    for (const text of [
      `x${token}`,
      `9${token}`,
      `_${token}`,
      `\u001b[31m${token}\u001b[0m`,
      `{"log":"line\\n${token}"}`,
      `{"env":"A=1\\tpassword=hunter2hunter2"}`,
    ]) {
      const out = redact(text);
      expect(out, text).not.toContain(token.slice(4));
      expect(out, text).not.toContain('hunter2hunter2');
    }
  });

  it('attack: an opaque Authorization value of no known shape', () => {
    const out = redact(`curl -H "Authorization: Bearer 9f8e7d6c5b4a39281706f5e4" https://x\nAuthorization: token abcdefABCDEF123456`);
    expect(out).not.toContain('9f8e7d6c5b4a39281706f5e4');
    expect(out).not.toContain('abcdefABCDEF123456');
  });

  it('control: prose about bearer tokens and ordinary identifiers are kept', () => {
    const text = 'Bearer tokens go in the Authorization header; see getAccessToken() and the github_pat docs.';
    expect(redact(text)).toBe(text);
  });
});
