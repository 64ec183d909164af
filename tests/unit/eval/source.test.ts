import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ensureSource, parseIntegrity, parseSpec, sourceCacheDir } from '../../../src/eval/source.js';

describe('parseSpec and parseIntegrity', () => {
  it('reads each registry’s exact-version spelling and refuses ranges', () => {
    expect(parseSpec('npm', '@fastify/error@4.2.0')).toEqual({ name: '@fastify/error', version: '4.2.0' });
    expect(parseSpec('pypi', 'more-itertools==10.5.0')).toEqual({ name: 'more-itertools', version: '10.5.0' });
    expect(parseSpec('go', 'github.com/google/go-cmp@v0.6.0')).toEqual({ name: 'github.com/google/go-cmp', version: 'v0.6.0' });
    expect(parseSpec('crate', 'semver@1.0.23')).toEqual({ name: 'semver', version: '1.0.23' });
    expect(parseSpec('npm', 'qs@^6.13.0')).toMatch(/exact version/);
    expect(parseSpec('npm', 'qs')).toMatch(/name@version/);
    expect(parseSpec('pypi', 'inflection>=0.5')).toMatch(/name==version/);
  });

  it('takes npm’s SRI, sha256:<hex> and Go’s h1: sums, nothing weaker', () => {
    expect(parseIntegrity('sha512-zRpUiDwd/xk6ADqPMATG8vc9VPrkck7T07OIx0gnjmJAnHnTVXNQG3vfvWNuiZIkwu9KrKdA1iJKfsfTVxE6NA==')).toMatchObject({
      algorithm: 'sha512',
    });
    expect(parseIntegrity('sha256:61697e0a1c7e512e84a621326239844a24d8207b4669b41bc18b32ea5cbf988b')).toMatchObject({ algorithm: 'sha256' });
    expect(parseIntegrity('h1:ofyhxvXcZhMsU5ulbFiLKl/XBFqE1GSq7atu8tAmTRI=')).toEqual({ goSum: 'h1:ofyhxvXcZhMsU5ulbFiLKl/XBFqE1GSq7atu8tAmTRI=' });
    expect(typeof parseIntegrity('sha1-abc')).toBe('string');
    expect(typeof parseIntegrity('md5:00ff')).toBe('string');
  });

  it('puts the cache under KILN_HOME, else ~/.cache/kiln', () => {
    expect(sourceCacheDir({ KILN_HOME: '/h' })).toBe('/h/eval-sources');
    expect(sourceCacheDir({ XDG_CACHE_HOME: '/c' })).toBe('/c/kiln/eval-sources');
  });
});

describe('ensureSource (the npm registry, through npm)', () => {
  afterEach(() => vi.unstubAllEnvs());
  const spec = 'buffer-equal-constant-time@1.0.1';
  const integrity = 'sha512-zRpUiDwd/xk6ADqPMATG8vc9VPrkck7T07OIx0gnjmJAnHnTVXNQG3vfvWNuiZIkwu9KrKdA1iJKfsfTVxE6NA==';

  it('refuses a tarball whose hash is not the pinned one and keeps nothing of it', async () => {
    const cache = mkdtempSync(join(tmpdir(), 'kiln-src-'));
    const wrong = integrity.replace('zRp', 'zRq');
    await expect(ensureSource({ kind: 'npm', spec, integrity: wrong }, cache)).rejects.toThrow(/the archive's hash is sha512-zRpU.*not the pinned sha512-zRqU/);
    expect(readdirSync(join(cache, 'npm'))).toEqual([]);
  });

  it('fetches the pinned tarball once, unpacked with its own tests, and serves it from the cache after', async () => {
    const cache = mkdtempSync(join(tmpdir(), 'kiln-src-'));
    const [a, b] = await Promise.all([ensureSource({ kind: 'npm', spec, integrity }, cache), ensureSource({ kind: 'npm', spec, integrity }, cache)]);
    expect(a).toBe(b);
    expect(readFileSync(join(a, 'test.js'), 'utf8')).toContain("describe('buffer-equal-constant-time'");
    expect(existsSync(join(a, 'index.js'))).toBe(true);
    // no client is reachable now: the second fetch must come from the cache
    vi.stubEnv('PATH', '/nonexistent');
    expect(await ensureSource({ kind: 'npm', spec, integrity }, cache)).toBe(a);
  }, 60_000);

  it('refuses a Go module pinned by an archive hash, before any client runs', async () => {
    const cache = mkdtempSync(join(tmpdir(), 'kiln-src-'));
    await expect(ensureSource({ kind: 'go', spec: 'github.com/google/go-cmp@v0.6.0', integrity }, cache)).rejects.toThrow(/pinned by its h1: sum/);
  });
});
