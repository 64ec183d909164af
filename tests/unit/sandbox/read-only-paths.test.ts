import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createSandbox } from '../../../src/sandbox/index.js';
import { cleanupTempDirs, tempDir } from './helpers.js';

afterAll(() => cleanupTempDirs());

describe('paths linked into the worktree (readOnlyPaths)', () => {
  it('are readable, never writable, and invisible when not given', async () => {
    const sandbox = await createSandbox({ mode: 'bwrap' });
    const ws = tempDir('ro-ws');
    const deps = join(tempDir('ro-deps'), 'node_modules');
    mkdirSync(deps);
    writeFileSync(join(deps, 'lib.js'), 'module.exports = 41;\n');

    const hidden = await sandbox.run(`cat ${deps}/lib.js`, { workspace: ws, timeoutMs: 5000 });
    expect(hidden.exitCode).not.toBe(0); // /tmp is private inside the sandbox

    const read = await sandbox.run(`node -e "console.log(require('${deps}/lib.js') + 1)"`, { workspace: ws, timeoutMs: 5000, readOnlyPaths: [deps] });
    expect(read.output).toContain('42');

    const write = await sandbox.run(`echo pwned > ${deps}/lib.js; echo new > ${deps}/new.js`, { workspace: ws, timeoutMs: 5000, readOnlyPaths: [deps] });
    expect(write.exitCode).not.toBe(0);
    expect(readFileSync(join(deps, 'lib.js'), 'utf8')).toBe('module.exports = 41;\n');
    expect(existsSync(join(deps, 'new.js'))).toBe(false);
  });
});
