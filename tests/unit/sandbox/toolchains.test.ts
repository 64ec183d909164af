/** Host toolchains reach sandboxed commands: found, put on PATH, bound read-only when hidden. */
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { commandEnv } from '../../../src/sandbox/env.js';
import { cacheEnv, discoverToolchains, SANDBOX_CACHE, toolchainBinds } from '../../../src/sandbox/toolchains.js';
import { createSandbox } from '../../../src/sandbox/index.js';

function fakeTool(dir: string, name: string) {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, name), '#!/bin/sh\necho fake\n');
  chmodSync(join(dir, name), 0o755);
}

describe('discoverToolchains', () => {
  it('finds a Go under a hidden home and binds its install folder read-only; PATH gets its bin', () => {
    const home = mkdtempSync(join(tmpdir(), 'kiln-tc-'));
    fakeTool(join(home, 'sdk', 'go', 'bin'), 'go');
    const t = discoverToolchains({ PATH: `${join(home, 'sdk', 'go', 'bin')}:/usr/bin`, HOME: home }, []);
    expect(t.found).toEqual([{ tools: ['go'], bin: join(home, 'sdk', 'go', 'bin'), bind: join(home, 'sdk', 'go') }]);
    expect(toolchainBinds(undefined, t)).toEqual(['--ro-bind', join(home, 'sdk', 'go'), join(home, 'sdk', 'go')]);
    expect(commandEnv(undefined, '/tmp/home', {}, undefined, t).PATH.split(':')[0]).toBe(join(home, 'sdk', 'go', 'bin'));
  });

  it('control: a PATH folder without a known toolchain, or inside node_modules, is not added', () => {
    const home = mkdtempSync(join(tmpdir(), 'kiln-tc-'));
    fakeTool(join(home, 'bin'), 'not-a-toolchain');
    fakeTool(join(home, 'node_modules', '.bin'), 'go');
    const t = discoverToolchains({ PATH: `${join(home, 'bin')}:${join(home, 'node_modules', '.bin')}`, HOME: home }, []);
    expect(t.found).toEqual([]);
  });

  it('points the tools’ caches into the bound cache folder', () => {
    expect(cacheEnv(SANDBOX_CACHE)).toMatchObject({
      GOCACHE: `${SANDBOX_CACHE}/go-build`,
      npm_config_cache: `${SANDBOX_CACHE}/npm`,
      PIP_CACHE_DIR: `${SANDBOX_CACHE}/pip`,
    });
  });
});

describe('in the sandbox', () => {
  it('go runs (exit 0, not 127) and writes its build cache into the given cache folder only', async () => {
    const sb = await createSandbox({ mode: 'bwrap' });
    const ws = mkdtempSync(join(tmpdir(), 'kiln-tc-ws-'));
    const cache = mkdtempSync(join(tmpdir(), 'kiln-tc-cache-'));
    const r = await sb.run('go env GOCACHE && go version', { workspace: ws, timeoutMs: 60_000, cacheDir: cache });
    expect(r.exitCode, r.output).toBe(0);
    expect(r.output).toContain(`${SANDBOX_CACHE}/go-build`);
    expect(r.output).toMatch(/go version go1\./);
  });
});
