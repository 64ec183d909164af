import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { harness, SCRIPT } from './harness.js';

/*
 * `scripted:FILE` names a file on the server's host. Through `POST /runs` it was a file reader
 * for any tenant: the 400 quoted the first bytes of /etc/shadow and of approval.key, and said
 * which paths exist. A server accepts a scripted model only when its operator enabled it, and
 * even then no answer carries a file's content or tells one missing file from another.
 */

afterEach(() => {
  vi.unstubAllEnvs();
  vi.restoreAllMocks();
});

/** files only the server's host should know about: a secret, a key, a directory */
function hostFiles(home: string) {
  const secret = join(home, 'shadow');
  writeFileSync(secret, 'root:$6$SECRET-HASH-c0ffee:19000:0:99999:7:::\n');
  const key = join(home, 'server', 'approval.key');
  mkdirSync(join(home, 'server'), { recursive: true });
  writeFileSync(key, 'a2V5LWJ5dGVzLXRoYXQtbXVzdC1uZXZlci1sZWF2ZQ==\n');
  const dir = join(home, 'a-directory');
  mkdirSync(dir);
  return { secret, key, dir, missing: join(home, 'no-such-file.json') };
}

const leaks = (text: string) => /SECRET-HASH|c0ffee|a2V5LWJ5|root:/.test(text);

describe('a scripted model through POST /runs', () => {
  it('attack: on a server that did not enable them, scripted:FILE is refused before any file is read, the same way for every path', async () => {
    const h = harness({ allowScriptedModels: false });
    const f = hostFiles(h.home);
    const answers = new Set<string>();
    for (const file of [f.secret, f.key, f.dir, f.missing, '/etc/shadow', 'examples/scripts/revoked-session.json']) {
      const r = await h.call('POST', '/runs', h.t.acmeRunner, { repo: h.acmeRepo, goal: 'fix it', model: `scripted:${file}` });
      const text = await r.text();
      expect(r.status, file).toBe(403);
      expect(leaks(text), text).toBe(false);
      answers.add(text);
    }
    // one answer for every path: nothing tells which exist
    expect(answers.size).toBe(1);
    expect(JSON.parse([...answers][0]!)).toMatchObject({ error: 'model_not_allowed', field: 'model' });
    expect([...answers][0]).toContain('--allow-scripted-model');
    expect(h.backend.starts).toBe(0);
  });

  it('control: the same server starts a run with a real model', async () => {
    vi.stubEnv('ANTHROPIC_BASE_URL', 'http://127.0.0.1:9');
    const h = harness({ allowScriptedModels: false });
    const r = await h.call('POST', '/runs', h.t.acmeRunner, { repo: h.acmeRepo, goal: 'fix it', model: 'claude-sonnet-4-5' });
    expect(r.status, await r.clone().text()).toBe(201);
    expect(h.backend.starts).toBe(1);
  });

  it('attack: on a server that enabled them, a file that is not a script gives one answer whatever it holds or whether it exists', async () => {
    const log = vi.spyOn(console, 'error').mockImplementation(() => {});
    const h = harness({ allowScriptedModels: true });
    const f = hostFiles(h.home);
    const answers = new Set<string>();
    for (const file of [f.secret, f.key, f.dir, f.missing]) {
      const r = await h.call('POST', '/runs', h.t.acmeRunner, { repo: h.acmeRepo, goal: 'fix it', model: `scripted:${file}` });
      const text = await r.text();
      expect(r.status, file).toBe(400);
      expect(leaks(text), text).toBe(false);
      answers.add(text);
    }
    expect(answers.size).toBe(1);
    expect(JSON.parse([...answers][0]!)).toMatchObject({ error: 'bad_request', field: 'model' });
    // the operator still learns why, in the server's own log
    expect(log.mock.calls.flat().join('\n')).toMatch(/no such file/);
    expect(h.backend.starts).toBe(0);
  });

  it('control: a server that enabled them starts a run with a real script', async () => {
    const h = harness({ allowScriptedModels: true });
    const r = await h.call('POST', '/runs', h.t.acmeRunner, { repo: h.acmeRepo, goal: 'fix it', model: SCRIPT });
    expect(r.status).toBe(201);
    expect(await r.json()).toMatchObject({ scripted: true });
  });
});
