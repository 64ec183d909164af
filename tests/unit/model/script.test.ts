import { chmod, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createModelClient, loadScript, ModelError, ScriptError } from '../../../src/model/index.js';
import { scriptFile } from './helpers.js';

async function loadError(file: string): Promise<ScriptError> {
  const err = await loadScript(file).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(ScriptError);
  return err as ScriptError;
}

describe('loadScript', () => {
  it('names a missing file in one line', async () => {
    const err = await loadError('/nonexistent/kiln/script.json');
    expect(err.message).toBe('script /nonexistent/kiln/script.json: no such file');
  });

  it('says when the file is not JSON', async () => {
    const file = await scriptFile('{ "steps": [ ');
    expect((await loadError(file)).message).toMatch(new RegExp(`^script ${file}: not valid JSON`));
  });

  it('attack: a file that is not a script (a password file, a JSON credential) is named, its content never quoted', async () => {
    // the worker reads whatever a run request names, and the requester reads the error
    const shadow = await scriptFile('root:$6$SECRETHASHc0ffee:19000:0:99999:7:::\n');
    const shadowErr = (await loadError(shadow)).message;
    expect(shadowErr).toMatch(new RegExp(`^script ${shadow}: not valid JSON \\(`));
    expect(shadowErr).not.toMatch(/root|SECRET|c0ffee/);
    const creds = await scriptFile({ steps: 'AKIAIOSFODNN7EXAMPLE-wJalrXUtnFEMI', type: 'service_account' });
    const credsErr = (await loadError(creds)).message;
    expect(credsErr).toMatch(/steps: expected array/);
    expect(credsErr).not.toMatch(/AKIA|wJalr/);
    // control: a broken script of one's own still says where it breaks
    const broken = await scriptFile('{\n  "steps" []}');
    expect((await loadError(broken)).message).toMatch(/not valid JSON \(at line 2, column 11\)/);
  });

  it('names the step and field that is wrong, counting steps from 1', async () => {
    const file = await scriptFile({ steps: [{ text: 'ok' }, { text: 'x', tool_use: [{ name: 7 }] }] });
    const err = await loadError(file);
    expect(err.message).toContain(`script ${file}: step 2: tool_use[0].name:`);
    expect(err.message).not.toContain('\n');
  });

  it('rejects misspelt keys and steps that give no reply', async () => {
    const misspelt = await scriptFile({ steps: [{ text: 'a', tool_uses: [] }] });
    expect((await loadError(misspelt)).message).toContain('step 1: unknown field "tool_uses"');
    const empty = await scriptFile({ steps: [{ expect: { user_contains: 'x' } }] });
    expect((await loadError(empty)).message).toContain('step 1: needs "text" or "tool_use"');
    const noSteps = await scriptFile({ name: 'n', steps: [] });
    expect((await loadError(noSteps)).message).toContain('steps:');
  });

  it('expands repeat and takes the name from the file when none is given', async () => {
    const file = await scriptFile({ steps: [{ text: 'a', repeat: 3 }, { text: 'b' }] }, 'bench-100.json');
    const script = await loadScript(file);
    expect(script.name).toBe('bench-100');
    expect(script.steps.map((s) => s.text)).toEqual(['a', 'a', 'a', 'b']);
    expect(script.steps[1]?.origin).toBe('step 1, repeat 2 of 3');
    expect(script.steps[3]?.origin).toBe('step 2');
  });

  it('reads a script again after it changes', async () => {
    const file = await scriptFile({ steps: [{ text: 'first' }] });
    expect((await loadScript(file)).steps[0]?.text).toBe('first');
    await writeFile(file, JSON.stringify({ steps: [{ text: 'second, longer' }] }));
    expect((await loadScript(file)).steps[0]?.text).toBe('second, longer');
  });

  it('makes createModelClient fail up front with a script ModelError', async () => {
    const file = await scriptFile({ steps: [{ text: 1 }] });
    const err = await createModelClient({ spec: `scripted:${file}`, runId: 'r' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ModelError);
    expect(err).toMatchObject({ kind: 'script', retryable: false });
    expect((err as Error).message).toContain(`script ${file}: step 1: text:`);
  });

  it('resolves a relative scripted: path from the given directory', async () => {
    const file = await scriptFile({ steps: [{ text: 'hi' }] });
    const client = await createModelClient({
      spec: `scripted:${path.basename(file)}`,
      runId: 'rel',
      cwd: path.dirname(file),
    });
    expect(client.scripted).toBe(true);
  });

  it('says when the path is a directory', async () => {
    const dir = path.dirname(await scriptFile({ steps: [{ text: 'hi' }] }));
    expect((await loadError(dir)).message).toBe(`script ${dir}: not a file`);
  });

  // root reads any file, so there the permission error cannot be provoked
  it.skipIf(process.getuid?.() === 0)('says when the file cannot be read', async () => {
    const file = await scriptFile({ steps: [{ text: 'hi' }] }, 'locked.json');
    await chmod(file, 0o000);
    expect((await loadError(file)).message).toBe(`script ${file}: cannot read it (EACCES)`);
  });
});
