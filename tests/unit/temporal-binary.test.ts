import { mkdirSync, mkdtempSync, writeFileSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cacheDir, findTemporalCli, provisionTemporalCli, TEMPORAL_CLI_VERSION } from '../../src/temporal/binary.js';

describe('the Temporal CLI binary', () => {
  const cache = () => mkdtempSync(join(tmpdir(), 'kiln-cache-'));

  it('is cached per version outside the repo and reused when present', async () => {
    const home = cache();
    const env = { XDG_CACHE_HOME: home, PATH: '/nonexistent' };
    expect(cacheDir(env)).toBe(join(home, 'kiln', 'temporal-cli', TEMPORAL_CLI_VERSION));
    expect(findTemporalCli(env)).toBeUndefined();
    mkdirSync(cacheDir(env), { recursive: true });
    writeFileSync(join(cacheDir(env), 'temporal'), '#!/bin/sh\n');
    chmodSync(join(cacheDir(env), 'temporal'), 0o755);
    // already there: no build, no Go needed
    expect(await provisionTemporalCli({ env })).toBe(join(cacheDir(env), 'temporal'));
  });

  it('KILN_TEMPORAL_CLI points at any other binary, and must exist', () => {
    expect(findTemporalCli({ KILN_TEMPORAL_CLI: '/bin/sh' })).toBe('/bin/sh');
    expect(() => findTemporalCli({ KILN_TEMPORAL_CLI: '/nope/temporal' })).toThrow(/KILN_TEMPORAL_CLI=\/nope\/temporal does not exist/);
  });

  it('without a Go toolchain the error says how to get one', async () => {
    const env = { XDG_CACHE_HOME: cache(), PATH: '/nonexistent' };
    await expect(provisionTemporalCli({ env })).rejects.toThrow(/no Go toolchain.*install Go/);
  });
});
