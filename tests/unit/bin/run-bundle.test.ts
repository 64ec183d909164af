/**
 * bin/kiln.js loads `kiln run` from its bundle only while the bundle is as new as every file it
 * was made from: a `tsc` without the bundling step, or an install, must never leave `kiln run`
 * running old code. A copy of the launcher over stand-in entries says which one it loaded; the
 * real build's list is checked after the build, in tests/e2e/run-bundle-build.test.ts.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../../..');
let dir: string;
const cli = () => join(dir, 'dist', 'src', 'cli');
const stand = (name: string) => `export async function main(argv) { process.stdout.write('${name} ' + argv.slice(2).join(' ')); }\n`;
const standCjs = (name: string) => `exports.main = async (argv) => { process.stdout.write('${name} ' + argv.slice(2).join(' ')); };\n`;
const bundleFile = () => join(cli(), 'run-main.bundle.cjs');
const caches = () => readdirSync(cli()).filter((f) => f.endsWith('.cache'));
const launch = (...args: string[]) => execFileSync(process.execPath, [join(dir, 'bin', 'kiln.js'), ...args], { encoding: 'utf8' });
const age = (file: string, secondsAgo: number) => {
  const t = Date.now() / 1000 - secondsAgo;
  utimesSync(file, t, t);
};

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'kiln-bin-'));
  mkdirSync(join(dir, 'bin'));
  mkdirSync(cli(), { recursive: true });
  copyFileSync(join(ROOT, 'bin', 'kiln.js'), join(dir, 'bin', 'kiln.js'));
  writeFileSync(join(dir, 'package.json'), '{"type":"module"}\n');
  writeFileSync(join(cli(), 'main.js'), stand('compiled'));
  writeFileSync(join(cli(), 'run-main.js'), stand('compiled-run-main'));
  copyFileSync(join(ROOT, 'bin', 'code-cache.js'), join(dir, 'bin', 'code-cache.js'));
  writeFileSync(bundleFile(), standCjs('bundle'));
  writeFileSync(join(cli(), 'run-main.bundle.json'), JSON.stringify({ madeFrom: ['run-main.js', '../../../node_modules/.package-lock.json'] }));
  mkdirSync(join(dir, 'node_modules'));
  writeFileSync(join(dir, 'node_modules', '.package-lock.json'), '{}');
  for (const f of [join(cli(), 'run-main.js'), join(dir, 'node_modules', '.package-lock.json')]) age(f, 60);
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('bin/kiln.js and the run bundle', () => {
  it('kiln run loads the bundle built after its sources; every other command the compiled CLI', () => {
    expect(launch('run', '--repo', '.')).toBe('bundle run --repo .');
    expect(launch('status', 'r-1')).toBe('compiled status r-1');
    expect(launch('--help')).toBe('compiled --help');
  });

  it('a compiled file newer than the bundle (tsc alone rebuilt it): the compiled CLI runs', () => {
    age(bundleFile(), 120);
    expect(launch('run', '--repo', '.')).toBe('compiled run --repo .');
  });

  it('an install after the bundle was built: the compiled CLI runs', () => {
    age(bundleFile(), 30);
    writeFileSync(join(dir, 'node_modules', '.package-lock.json'), '{"changed":true}');
    expect(launch('run')).toBe('compiled run');
  });

  it('no bundle, or no list of what it was made from: the compiled CLI runs', () => {
    rmSync(join(cli(), 'run-main.bundle.json'));
    expect(launch('run')).toBe('compiled run');
    rmSync(bundleFile());
    expect(launch('run')).toBe('compiled run');
  });

  it('the bundle runs with the code cache its first run left, and a rebuilt bundle of the same length never runs the old code', () => {
    expect(caches()).toEqual([]);
    expect(launch('run', 'a')).toBe('bundle run a');
    // the first run left V8's code for the next
    expect(caches()).toHaveLength(1);
    expect(launch('run', 'b')).toBe('bundle run b');
    expect(caches()).toHaveLength(1);
    // V8 itself only compares the source's length: a rebuild to the same length must not be answered by the old cache
    writeFileSync(bundleFile(), standCjs('BUNDLE'));
    expect(launch('run', 'c')).toBe('BUNDLE run c');
  });

  it('a code cache it can neither read nor write costs nothing but the cache', () => {
    expect(launch('run', 'a')).toBe('bundle run a');
    // where the cache file was, a directory: reading it fails, and so does renaming a new one over it
    const [cache] = caches();
    rmSync(join(cli(), cache!));
    mkdirSync(join(cli(), cache!, 'x'), { recursive: true });
    expect(launch('run', 'b')).toBe('bundle run b');
    expect(readdirSync(cli()).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });
});
