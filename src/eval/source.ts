/**
 * A task's library fetched from its registry at eval time, never committed: an npm tarball, a
 * PyPI sdist, a Go module or a crate, fetched once with the registry's own client into a cache,
 * checked against the hash the task pins, and unpacked. Only the ordinary clients run on the
 * host; the library's own code runs later, in Kiln's sandbox.
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { cp, mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { CliError } from '../shared/errors.js';
import { settingsFrom } from '../settings.js';

export const SOURCE_KINDS = ['npm', 'pypi', 'go', 'crate'] as const;
export type SourceKind = (typeof SOURCE_KINDS)[number];

export interface TaskSource {
  kind: SourceKind;
  /** npm `name@version`, PyPI `name==version`, Go `module@version`, crate `name@version` */
  spec: string;
  /** the archive's hash as `sha512-<base64>` (npm's integrity), `sha256:<hex>`, or Go's `h1:` sum */
  integrity: string;
}

const FETCH_TIMEOUT_MS = 5 * 60_000;

/** `$KILN_HOME/eval-sources`, else `~/.cache/kiln/eval-sources`. */
export function sourceCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(settingsFrom(env).home ?? join(env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'kiln'), 'eval-sources');
}

/** The name and version a spec names, or why it names none. */
export function parseSpec(kind: SourceKind, spec: string): { name: string; version: string } | string {
  const m =
    kind === 'pypi'
      ? /^([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9][A-Za-z0-9.+!_-]*)$/.exec(spec)
      : /^((?:@[a-z0-9][\w.-]*\/)?[A-Za-z0-9][\w./~-]*)@(v?\d[\w.+-]*)$/.exec(spec);
  if (!m) return kind === 'pypi' ? 'expected name==version' : 'expected name@version (an exact version)';
  return { name: m[1]!, version: m[2]! };
}

/** What an `integrity` pin holds, or why it is not one. */
export function parseIntegrity(pin: string): { algorithm: 'sha256' | 'sha512'; digest: Buffer } | { goSum: string } | string {
  if (/^h1:[A-Za-z0-9+/]{43}=$/.test(pin)) return { goSum: pin };
  const sri = /^(sha256|sha512)-([A-Za-z0-9+/]+={0,2})$/.exec(pin);
  if (sri) return { algorithm: sri[1] as 'sha256' | 'sha512', digest: Buffer.from(sri[2]!, 'base64') };
  const hex = /^(sha256|sha512):([0-9a-f]+)$/.exec(pin);
  if (hex) return { algorithm: hex[1] as 'sha256' | 'sha512', digest: Buffer.from(hex[2]!, 'hex') };
  return 'expected sha512-<base64>, sha256:<hex> or a Go h1: sum';
}

const inFlight = new Map<string, Promise<string>>();

/**
 * The unpacked package's folder in the cache, fetched and verified the first time. Two runs of
 * one task at once share one fetch; a fetch that fails leaves nothing behind.
 */
export function ensureSource(src: TaskSource, cacheRoot = sourceCacheDir()): Promise<string> {
  const key = join(cacheRoot, src.kind, src.spec.replace(/[/\\]/g, '+').replace(/==/, '@'));
  let p = inFlight.get(key);
  if (!p) {
    p = cachedOrFetch(src, key).finally(() => inFlight.delete(key));
    inFlight.set(key, p);
  }
  return p;
}

async function cachedOrFetch(src: TaskSource, key: string): Promise<string> {
  const tree = join(key, 'tree');
  const marker = join(key, 'source.json');
  if (existsSync(marker)) {
    const seen = JSON.parse(await readFile(marker, 'utf8')) as { integrity?: string };
    if (seen.integrity === src.integrity && existsSync(tree)) return tree;
    await rm(key, { recursive: true, force: true });
  }
  const scratch = `${key}.tmp-${randomBytes(4).toString('hex')}`;
  await mkdir(scratch, { recursive: true });
  try {
    await fetchInto(src, scratch);
    await writeFile(
      join(scratch, 'source.json'),
      JSON.stringify({ kind: src.kind, spec: src.spec, integrity: src.integrity, fetchedAt: new Date().toISOString() }) + '\n',
    );
    await rename(scratch, key).catch(async (err: NodeJS.ErrnoException) => {
      // another eval process finished the same fetch first: its copy is as good as ours
      if (!existsSync(marker)) throw err;
      await rm(scratch, { recursive: true, force: true });
    });
  } catch (err) {
    await rm(scratch, { recursive: true, force: true });
    throw err;
  }
  return tree;
}

/** Fetches into `dir`: the archive under `dir/archive/`, the package's files under `dir/tree/`. */
async function fetchInto(src: TaskSource, dir: string): Promise<void> {
  const pin = parseIntegrity(src.integrity);
  if (typeof pin === 'string') throw new CliError(`${src.kind} ${src.spec}: integrity ${src.integrity}: ${pin}`);
  const spec = parseSpec(src.kind, src.spec);
  if (typeof spec === 'string') throw new CliError(`${src.kind} ${src.spec}: ${spec}`);
  const archiveDir = join(dir, 'archive');
  const tree = join(dir, 'tree');
  await mkdir(archiveDir, { recursive: true });
  if (src.kind === 'go') {
    if (!('goSum' in pin)) throw new CliError(`go ${src.spec}: a Go module is pinned by its h1: sum (go.sum's line), not ${src.integrity}`);
    // go verifies the module against the checksum database itself; the pin holds it to this one
    const env = { GOMODCACHE: join(dir, 'gomod'), GOFLAGS: '-modcacherw', GOTOOLCHAIN: 'local', GO111MODULE: 'on' };
    const out = await client(src, 'go', ['mod', 'download', '-json', src.spec], archiveDir, env);
    const info = JSON.parse(out) as { Dir?: string; Sum?: string; Error?: string };
    if (info.Error || !info.Dir) throw new CliError(`go ${src.spec}: ${info.Error ?? 'go mod download gave no folder'}`);
    if (info.Sum !== pin.goSum) throw new CliError(`go ${src.spec}: the module's sum is ${info.Sum}, the task pins ${pin.goSum}`);
    await cp(info.Dir, tree, { recursive: true });
    await rm(join(dir, 'gomod'), { recursive: true, force: true });
    return;
  }
  if ('goSum' in pin) throw new CliError(`${src.kind} ${src.spec}: an h1: sum pins Go modules only`);
  const archive = await download(src, spec, archiveDir, dir);
  const digest = createHash(pin.algorithm)
    .update(await readFile(archive))
    .digest();
  if (!digest.equals(pin.digest)) {
    const got = src.integrity.includes(':') ? `${pin.algorithm}:${digest.toString('hex')}` : `${pin.algorithm}-${digest.toString('base64')}`;
    throw new CliError(`${src.kind} ${src.spec}: the archive's hash is ${got}, not the pinned ${src.integrity}`);
  }
  const unpacked = join(dir, 'unpacked');
  await mkdir(unpacked);
  if (archive.endsWith('.zip')) await client(src, 'python3', ['-m', 'zipfile', '-e', archive, unpacked], dir);
  else await client(src, 'tar', ['-xzf', archive, '-C', unpacked, '--no-same-owner', '--no-same-permissions', '--warning=no-unknown-keyword'], dir);
  // every one of these archives holds one top folder (npm's `package/`, `name-version/`)
  const top = await readdir(unpacked);
  if (top.length !== 1) throw new CliError(`${src.kind} ${src.spec}: expected one top folder in the archive, found ${top.length}`);
  await rename(join(unpacked, top[0]!), tree);
  await rm(unpacked, { recursive: true, force: true });
}

/** Downloads the archive with the registry's client; returns its path. */
async function download(src: TaskSource, spec: { name: string; version: string }, archiveDir: string, dir: string): Promise<string> {
  if (src.kind === 'npm') {
    // npm checks the tarball against the registry's integrity as it fetches it
    await client(src, 'npm', ['pack', src.spec, '--pack-destination', archiveDir, '--silent', '--ignore-scripts'], archiveDir);
  } else if (src.kind === 'pypi') {
    await client(
      src,
      'python3',
      ['-m', 'pip', 'download', '--no-binary', ':all:', '--no-deps', '--disable-pip-version-check', '-q', '-d', archiveDir, src.spec],
      archiveDir,
    );
  } else {
    // cargo fetches a crate through the index, which checks its checksum; a throwaway project asks for it
    const project = join(dir, 'fetch-project');
    await mkdir(join(project, 'src'), { recursive: true });
    await writeFile(join(project, 'src', 'lib.rs'), '');
    await writeFile(
      join(project, 'Cargo.toml'),
      `[package]\nname = "kiln-fetch"\nversion = "0.0.0"\nedition = "2021"\n\n[dependencies]\n${spec.name} = "=${spec.version}"\n`,
    );
    const cargoHome = join(dir, 'cargo-home');
    await client(src, 'cargo', ['fetch', '--quiet'], project, { CARGO_HOME: cargoHome });
    const registries = join(cargoHome, 'registry', 'cache');
    const name = `${spec.name}-${spec.version}.crate`;
    const found = (await readdir(registries)).map((r) => join(registries, r, name)).find((f) => existsSync(f));
    if (!found) throw new CliError(`crate ${src.spec}: cargo fetched no ${name}`);
    await cp(found, join(archiveDir, name));
    await rm(project, { recursive: true, force: true });
    await rm(cargoHome, { recursive: true, force: true });
  }
  const files = (await readdir(archiveDir)).filter((f) => /\.(tgz|tar\.gz|zip|crate)$/.test(f));
  if (files.length !== 1) throw new CliError(`${src.kind} ${src.spec}: expected one archive, the client left ${files.length}`);
  return join(archiveDir, files[0]!);
}

async function client(src: TaskSource, file: string, args: string[], cwd: string, env: Record<string, string> = {}): Promise<string> {
  const res = await execa(file, args, { cwd, env, extendEnv: true, reject: false, timeout: FETCH_TIMEOUT_MS, stdin: 'ignore' });
  if (res.exitCode === 0) return res.stdout;
  const why = res.timedOut
    ? `timed out after ${FETCH_TIMEOUT_MS / 1000} s`
    : (`${res.stderr}\n${res.stdout}`.trim().split('\n').filter(Boolean).pop() ?? `exit ${res.exitCode}`);
  throw new CliError(`fetching ${src.kind} ${src.spec}: ${file} ${args[0]} failed: ${why.slice(0, 300)}`);
}
