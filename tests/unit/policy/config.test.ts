import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { defaultPolicyConfig, isSensitivePath, loadPolicyConfig, PolicyConfigError } from '../../../src/policy/index.js';
import { tempRepo, type TempRepo } from './helpers.js';

let repo: TempRepo;
beforeEach(() => {
  repo = tempRepo();
});
afterEach(() => repo.cleanup());

const write = (name: string, text: string) => {
  mkdirSync(join(repo.dir, '.kiln'), { recursive: true });
  writeFileSync(join(repo.dir, '.kiln', name), text);
};

describe('loadPolicyConfig', () => {
  it('gives the defaults when there is no policy file', async () => {
    const c = await loadPolicyConfig(repo.dir);
    expect(c).toEqual(defaultPolicyConfig());
    expect(c.writeAllow).toEqual(['**']);
    expect(c.protected).toContain('**/*.test.*');
  });

  it('reads and fills in a partial policy', async () => {
    write('policy.json', JSON.stringify({ writeAllow: ['src/**'], commands: { allow: ['make test'] } }));
    const c = await loadPolicyConfig(repo.dir);
    expect(c.writeAllow).toEqual(['src/**']);
    expect(c.commands).toEqual({ allow: ['make test'], ask: [], deny: [] });
  });

  it('names the field and the reason on a bad value', async () => {
    write('policy.json', JSON.stringify({ writeAllow: ['a', 'b', 3] }));
    await expect(loadPolicyConfig(repo.dir)).rejects.toThrow('.kiln/policy.json: writeAllow[2]: expected string');
    write('policy.json', JSON.stringify({ commands: { allow: 'x' } }));
    await expect(loadPolicyConfig(repo.dir)).rejects.toThrow('.kiln/policy.json: commands.allow: expected array');
    write('policy.json', JSON.stringify({ unprotect: ['tests/**'] }));
    await expect(loadPolicyConfig(repo.dir)).rejects.toThrow('.kiln/policy.json: unprotect[0]: "tests/**": name one file (no glob characters)');
    write('policy.json', JSON.stringify({ unprotect: ['.kiln/policy.json'] }));
    await expect(loadPolicyConfig(repo.dir)).rejects.toThrow('.kiln/policy.json: unprotect[0]: ".kiln/policy.json": .git/ and .kiln/ are always protected');
    write('policy.json', JSON.stringify({ unprotect: ['tests/../src/a.js'] }));
    await expect(loadPolicyConfig(repo.dir)).rejects.toThrow(/unprotect\[0\]: .*relative to the repository root/);
    write('policy.json', JSON.stringify({ mode: 'yolo' }));
    await expect(loadPolicyConfig(repo.dir)).rejects.toThrow(/mode: expected one of "strict", "default", "auto"/);
    write('policy.json', JSON.stringify({ writeallow: [] }));
    await expect(loadPolicyConfig(repo.dir)).rejects.toThrow(/\(root\): unknown field "writeallow"/);
    write('policy.json', '{ not json');
    await expect(loadPolicyConfig(repo.dir)).rejects.toBeInstanceOf(PolicyConfigError);
  });

  it('refuses a YAML policy instead of ignoring it', async () => {
    write('policy.yaml', 'writeAllow: []\n');
    await expect(loadPolicyConfig(repo.dir)).rejects.toThrow(/YAML policies are not supported/);
  });
});

describe('isSensitivePath', () => {
  it('covers credentials but not templates', () => {
    for (const p of [
      '.env',
      'app/.env.production',
      'id_rsa',
      'k/tls.key',
      'a/b/cert.pem',
      '.aws/credentials',
      '.ssh/config',
      '.git/config',
      '.npmrc',
      '/home/u/.ssh/id_ed25519',
    ]) {
      expect(isSensitivePath(p), p).toBe(true);
    }
    for (const p of ['.env.example', 'src/env.ts', 'README.md', 'id_rsa.pub', 'src/keys.ts']) expect(isSensitivePath(p), p).toBe(false);
  });

  it('extends with sensitive and shrinks only through allowSensitive', () => {
    const c = { ...defaultPolicyConfig(), sensitive: ['vault/**'], allowSensitive: ['test/fixtures/*.pem'] };
    expect(isSensitivePath('vault/a.txt', c)).toBe(true);
    expect(isSensitivePath('test/fixtures/cert.pem', c)).toBe(false);
    expect(isSensitivePath('other/cert.pem', c)).toBe(true);
  });
});
