import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
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

  it('attack: a linked path that is a symlink is not bound (it would bind its target); control: the real directory is', async () => {
    const sandbox = await createSandbox({ mode: 'bwrap' });
    const outside = tempDir('ro-outside');
    writeFileSync(join(outside, 'lib.js'), "module.exports = 'outside-value';\n");
    const main = tempDir('ro-main');
    symlinkSync(outside, join(main, 'vendor'));
    mkdirSync(join(main, 'real'));
    writeFileSync(join(main, 'real', 'lib.js'), "module.exports = 'real-value';\n");
    const ws = tempDir('ro-ws');
    symlinkSync(join(main, 'vendor'), join(ws, 'vendor'));
    symlinkSync(join(main, 'real'), join(ws, 'real'));
    const readBoth = `node -e "for (const d of ['vendor', 'real']) try { console.log(require('./' + d + '/lib.js')) } catch { console.log(d + ' unreadable') }"`;
    const r = await sandbox.run(readBoth, { workspace: ws, timeoutMs: 5000, readOnlyPaths: [join(main, 'vendor'), join(main, 'real')] });
    expect(r.output).not.toContain('outside-value');
    expect(r.output).toContain('vendor unreadable');
    expect(r.output).toContain('real-value');
  });

  it('a linked path that is itself a credential (link: [".env"]) is not bound; a linked ordinary file is', async () => {
    const sandbox = await createSandbox({ mode: 'bwrap' });
    const ws = tempDir('ro-ws');
    const main = tempDir('ro-main');
    writeFileSync(join(main, '.env'), 'TOKEN=linked-secret-value\n');
    writeFileSync(join(main, 'shared.txt'), 'linked-plain-value\n');
    symlinkSync(join(main, '.env'), join(ws, '.env'));
    symlinkSync(join(main, 'shared.txt'), join(ws, 'shared.txt'));
    const r = await sandbox.run('cat .env shared.txt 2>&1', { workspace: ws, timeoutMs: 5000, readOnlyPaths: [join(main, '.env'), join(main, 'shared.txt')] });
    expect(r.output).not.toContain('linked-secret-value');
    expect(r.output).toContain('linked-plain-value');
  });
});
