import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runEval } from '../../../src/cli/actions/eval.js';
import { UsageError } from '../../../src/shared/errors.js';

const saved = { key: process.env.ANTHROPIC_API_KEY, url: process.env.ANTHROPIC_BASE_URL };
afterEach(() => {
  process.env.ANTHROPIC_API_KEY = saved.key;
  process.env.ANTHROPIC_BASE_URL = saved.url;
  if (saved.key === undefined) delete process.env.ANTHROPIC_API_KEY;
  if (saved.url === undefined) delete process.env.ANTHROPIC_BASE_URL;
});

// Bad input is refused before a server starts or a run is made, with exit code 2.
describe('kiln eval flags', () => {
  const lines: string[] = [];
  const out = (s: string) => lines.push(s);

  it('refuses a repeat that is not a whole number from 1 to 100', async () => {
    for (const repeat of ['0', '-1', '2.5', 'x', '101']) {
      await expect(runEval({ repeat }, out)).rejects.toThrow(new RegExp(`--repeat ${repeat.replace('.', '\\.')}`));
    }
  });

  it('refuses one scripted transcript for every task, and a real model without a key', async () => {
    await expect(runEval({ repeat: '1', model: 'scripted:/x.json' }, out)).rejects.toThrow(/each task's own script/);
    delete process.env.ANTHROPIC_API_KEY;
    delete process.env.ANTHROPIC_BASE_URL;
    const err = await runEval({ repeat: '1', model: 'claude-sonnet-4-5' }, out).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UsageError);
    expect((err as UsageError).exitCode).toBe(2);
    expect((err as Error).message).toMatch(/needs ANTHROPIC_API_KEY/);
  });

  it('refuses a task without a script when no model is given', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kiln-suite-'));
    mkdirSync(join(dir, 'bare', 'repo'), { recursive: true });
    writeFileSync(join(dir, 'bare', 'task.json'), JSON.stringify({ name: 'bare', kind: 'feature', goal: 'add x' }));
    await expect(runEval({ repeat: '1', suite: dir }, out)).rejects.toThrow(/bare: no "script" in task.json; pass --model/);
    expect(lines).toEqual([]);
  });
});
