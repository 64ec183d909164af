/** The one loader and wording every JSON file and zod-checked value of Kiln goes through. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { loadJsonFile } from '../../../src/shared/zod-error.js';

class BadFile extends Error {}
const schema = z.object({ name: z.string(), mode: z.enum(['a', 'b']).default('a'), tags: z.array(z.string()).default([]) }).strict();
const dir = mkdtempSync(join(tmpdir(), 'kiln-json-'));
const file = (name: string, text: string) => {
  writeFileSync(join(dir, name), text);
  return join(dir, name);
};
const refuse = (f: string) => (problem: string) => new BadFile(`${f}: ${problem}`);

describe('loadJsonFile', () => {
  it('gives the checked value, defaults applied', async () => {
    const f = file('ok.json', '{"name":"x"}');
    await expect(loadJsonFile(f, schema, refuse(f))).resolves.toEqual({ name: 'x', mode: 'a', tags: [] });
  });

  it('says every problem on one line, naming the field and what it got', async () => {
    const f = file('bad.json', '{"name":3,"mode":"c","tags":[1],"nmae":"x"}');
    const err = await loadJsonFile(f, schema, refuse(f)).catch((e: unknown) => e as Error);
    expect(err).toBeInstanceOf(BadFile);
    expect(err.message).not.toContain('\n');
    expect(err.message).toContain(`${f}: name: expected string, got number 3`);
    expect(err.message).toContain('mode: expected one of "a", "b", got the string "c"');
    expect(err.message).toMatch(/\(and 1 more\)$/);
  });

  it('refuses text that is not JSON, and a missing file unless the reader has a default for it', async () => {
    const f = file('broken.json', '{"name":');
    await expect(loadJsonFile(f, schema, refuse(f))).rejects.toThrow(new RegExp(`^${f}: not valid JSON \\(`));
    const missing = join(dir, 'none.json');
    await expect(loadJsonFile(missing, schema, refuse(missing))).rejects.toThrow(`${missing}: no such file`);
    await expect(loadJsonFile(missing, schema, refuse(missing), { ifMissing: () => schema.parse({ name: 'd' }) })).resolves.toMatchObject({ name: 'd' });
  });
});
