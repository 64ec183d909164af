import { readFileSync, readdirSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SETTINGS, SettingsError, settingsFrom } from '../../src/settings.js';

const ROOT = resolve(import.meta.dirname, '../..');

/** The first cell of each row of the README's "Settings" table: the variable names. */
function readmeNames(): string[] {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const section = readme.split(/^## Settings$/m)[1]?.split(/^## /m)[0] ?? '';
  return [...section.matchAll(/^\| `(KILN_\w+)`/gm)].map((m) => m[1]!);
}

function sources(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => join(dir, f));
}

describe('settings', () => {
  it("the README's table lists exactly the settings src/settings.ts defines, each once", () => {
    const names = readmeNames();
    expect(new Set(names).size).toBe(names.length);
    expect([...names].sort()).toEqual(SETTINGS.map((s) => s.name).sort());
  });

  it('no module but src/settings.ts reads a KILN_ variable from an environment', () => {
    // a write (`process.env.KILN_X = '1'`) or a copy handed to a child process is not a read
    const read = /\benv(?:\.|\[')(KILN_\w+)(?!\w)'?\]?(?!\s*=[^=])/g;
    const readers = [...sources('src'), ...sources('bench')]
      .filter((f) => relative('src', f) !== 'settings.ts')
      .flatMap((f) => [...readFileSync(join(ROOT, f), 'utf8').matchAll(read)].map((m) => `${f}: ${m[1]}`));
    expect(readers).toEqual([]);
  });

  it('the same environment gives the same settings until a variable changes', () => {
    const env: NodeJS.ProcessEnv = { KILN_TURNS_AHEAD_MS: '0' };
    const first = settingsFrom(env);
    expect(first.turnsAheadMs).toBe(0);
    expect(settingsFrom(env)).toBe(first);
    env.KILN_TURNS_AHEAD_MS = '250';
    expect(settingsFrom(env).turnsAheadMs).toBe(250);
    // unset and empty are the caller's default
    expect(settingsFrom({}).turnsAheadMs).toBeUndefined();
    expect(settingsFrom({ KILN_TASK_QUEUE: '' }).taskQueue).toBeUndefined();
  });

  it('a malformed value fails only when it is used, naming the variable', () => {
    const s = settingsFrom({ KILN_SETUP_ALLOW_NETS: '10.1.2.0/24,everything', KILN_HOST: 'h1' });
    expect(s.host).toBe('h1');
    expect(() => s.setupAllowNets).toThrow(SettingsError);
    expect(() => s.setupAllowNets).toThrow('KILN_SETUP_ALLOW_NETS: "everything" is not an IPv4 network like 10.1.2.0/24');
  });
});
