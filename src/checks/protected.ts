/**
 * What the verifier never takes from the model: tests and their fixtures, test-runner
 * configuration, the definitions of the checks, and CI — per ecosystem, not only JS names. A
 * change to any of these fails verification, and the verified tree gets the base's version back,
 * so the checks judge the code against the tests the repo had.
 */
import picomatch from 'picomatch';

const TEST_FILES: Record<string, string[]> = {
  js: ['**/*.test.*', '**/*.spec.*', '**/__tests__/**', '**/__snapshots__/**', 'test.{js,mjs,cjs,ts,mts,cts}', '**/test/**', '**/tests/**'],
  python: ['**/test_*.py', '**/*_test.py', '**/conftest.py', '**/tests/**'],
  go: ['**/*_test.go', '**/testdata/**'],
  rust: ['**/tests/**', '**/benches/**'],
  jvm: ['**/src/test/**'],
  ruby: ['**/spec/**', '**/test/**', '.rspec'],
};

const RUNNER_CONFIG = [
  '**/vitest.config.*',
  '**/vitest.workspace.*',
  '**/vite.config.*',
  '**/jest.config.*',
  '**/jest.setup.*',
  '**/.mocharc*',
  '**/karma.conf.*',
  '**/playwright.config.*',
  '**/cypress.config.*',
  '**/ava.config.*',
  '**/.nycrc*',
  '**/.c8rc*',
  '**/pytest.ini',
  '**/tox.ini',
  '**/noxfile.py',
  '**/.coveragerc',
  'go.work',
  'go.work.sum',
];

const CI = ['.github/**', '.gitlab-ci.yml', '.circleci/**', '.buildkite/**', 'azure-pipelines.yml', 'Jenkinsfile', '.travis.yml', '.git/**', '.kiln/**'];

/** Make-like files define what `make test` runs: protected when a check calls them. */
const RUNNERS_BY_CHECK: Array<{ calls: RegExp; files: string[] }> = [
  { calls: /(^|[\s;&|(])make\b/, files: ['Makefile', 'makefile', 'GNUmakefile', '**/*.mk'] },
  { calls: /(^|[\s;&|(])just\b/, files: ['justfile', 'Justfile', '.justfile'] },
  { calls: /(^|[\s;&|(])task\b/, files: ['Taskfile.yml', 'Taskfile.yaml'] },
  { calls: /(^|[\s;&|(])(tox|nox)\b/, files: ['tox.ini', 'noxfile.py'] },
];

/**
 * Files where only some sections are about the checks: a change to those sections is protected,
 * the rest (dependencies, metadata) is the model's to change.
 */
export const PROTECTED_SECTIONS: Record<string, { kind: 'json-keys'; keys: string[] } | { kind: 'ini-sections'; sections: RegExp }> = {
  'package.json': { kind: 'json-keys', keys: ['scripts', 'jest', 'mocha', 'ava', 'c8', 'nyc', 'vitest'] },
  'pyproject.toml': { kind: 'ini-sections', sections: /^(tool\.pytest|tool\.coverage|tool\.tox|tool\.hatch\.envs\.[^.]+\.scripts|tool\.poe)/ },
  'setup.cfg': { kind: 'ini-sections', sections: /^(tool:pytest|coverage:|aliases)/ },
};

/** Every ecosystem's tests, runner configuration and CI: the set no repo or user list can shrink. */
export const BUILTIN_PROTECTED: readonly string[] = [...new Set([...Object.values(TEST_FILES).flat(), ...RUNNER_CONFIG, ...CI])];

/** Never unprotected by name: git's data and Kiln's own configuration (its trust is bound to it). */
const NEVER_UNPROTECTED = picomatch(['.git/**', '.kiln/**'], { dot: true });

export interface ProtectedSet {
  /** whole files the model may not change */
  isProtected(path: string): boolean;
  /** whether the protected sections of this file (package.json scripts, pytest sections...) are judged */
  sectionsProtected(path: string): boolean;
  globs: string[];
}

export interface ProtectedSetOptions {
  /** exact paths the (trusted) configuration lets the model change although a glob protects them */
  unprotect?: readonly string[];
  /** the run's own globs (--protect, an eval task's tests): no `unprotect` undoes them */
  pinned?: readonly string[];
}

/** Script files a check runs directly (`./scripts/test.sh`, `bash ci/run.sh`): they define the check. */
function scriptsCalledBy(check: string): string[] {
  return [...check.matchAll(/(?:^|[\s;&|(])(?:\.\/|bash\s+|sh\s+)?([\w./-]+\.(?:sh|bash|py|mjs|cjs|js))\b/g)].map((m) => m[1]!.replace(/^\.\//, ''));
}

/**
 * Every ecosystem's set, the repo's own list on top, and what the checks themselves call. The
 * edit-tool policy and the verifier both judge by this one set, so a write the verifier would
 * reject is refused before it is made.
 */
export function protectedSet(repoGlobs: readonly string[], checks: readonly string[], o: ProtectedSetOptions = {}): ProtectedSet {
  const globs = [...new Set([...BUILTIN_PROTECTED, ...repoGlobs, ...(o.pinned ?? [])])];
  for (const check of checks) {
    for (const r of RUNNERS_BY_CHECK) if (r.calls.test(check)) globs.push(...r.files);
    globs.push(...scriptsCalledBy(check));
  }
  const match = picomatch(globs, { dot: true });
  const pinned = o.pinned?.length ? picomatch([...o.pinned], { dot: true }) : () => false;
  const named = new Set((o.unprotect ?? []).filter((p) => !NEVER_UNPROTECTED(p)));
  const released = (p: string) => named.has(p) && !pinned(p);
  return { isProtected: (p) => match(p) && !released(p), sectionsProtected: (p) => !released(p), globs };
}

/** Why a name cannot go in `unprotect`, or null: it must name one file, never a glob. */
export function unprotectProblem(path: string): string | null {
  if (!path || /[*?[\]{}!]/.test(path)) return 'name one file (no glob characters)';
  if (path.startsWith('/') || path.split('/').some((s) => s === '..' || s === '.' || s === ''))
    return 'give a path relative to the repository root, without "." or ".." parts';
  if (NEVER_UNPROTECTED(path)) return '.git/ and .kiln/ are always protected';
  return null;
}

/** The protected keys of a package.json that differ between two versions (added, removed or changed). */
export function changedJsonKeys(before: string | undefined, after: string | undefined, keys: string[]): string[] {
  const a = parseObject(before);
  const b = parseObject(after);
  if (a === undefined || b === undefined) return before === after ? [] : ['(file is not a JSON object)'];
  return keys.filter((k) => JSON.stringify(a[k] ?? null) !== JSON.stringify(b[k] ?? null));
}

/** Puts the base's protected keys back into the model's package.json, keeping everything else. */
export function restoreJsonKeys(base: string | undefined, model: string, keys: string[]): string {
  const a = parseObject(base) ?? {};
  const b = parseObject(model);
  if (!b) return base ?? model;
  for (const k of keys) {
    if (k in a) b[k] = a[k];
    else delete b[k];
  }
  return `${JSON.stringify(b, null, 2)}\n`;
}

/** INI/TOML section headers whose bodies differ between two versions. */
export function changedIniSections(before: string | undefined, after: string | undefined, sections: RegExp): string[] {
  const a = iniSections(before ?? '');
  const b = iniSections(after ?? '');
  const names = new Set([...a.keys(), ...b.keys()]);
  return [...names].filter((n) => sections.test(n) && a.get(n) !== b.get(n));
}

function iniSections(text: string): Map<string, string> {
  const out = new Map<string, string>();
  let name = '';
  let body: string[] = [];
  const flush = () =>
    out.set(
      name,
      body
        .map((l) => l.trim())
        .filter(Boolean)
        .join('\n'),
    );
  for (const line of text.split(/\r?\n/)) {
    const header = /^\s*\[{1,2}\s*([^\]]+?)\s*\]{1,2}\s*$/.exec(line);
    if (header) {
      flush();
      name = header[1]!.replace(/["']/g, '');
      body = [];
    } else body.push(line);
  }
  flush();
  return out;
}

function parseObject(text: string | undefined): Record<string, unknown> | undefined {
  if (text === undefined) return {};
  try {
    const v = JSON.parse(text) as unknown;
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** Above this many protected files, whole protected folders are held instead (bwrap's mounts are not free). */
const MAX_FILE_MOUNTS = 2000;
/** A name no real file has: a folder whose every possible child is protected is protected whole. */
const ANY_CHILD = '\u0000kiln-any-child';

/**
 * What to hold read-only in a worktree for the protected set, given the base's files (relative
 * paths): each protected file on its own, so a test run may still write new files beside them
 * (bytecode, outputs) — a new file in a protected folder never reaches the verdict: the verifier
 * takes the base's tree of protected paths. `.git` and `.kiln` always. In a repository with more
 * protected files than the mounts allow, a folder the set protects whole is held as one.
 */
export function protectedMounts(set: ProtectedSet, files: readonly string[]): string[] {
  const out = new Set<string>(['.git', '.kiln']);
  const held = files.filter((f) => set.isProtected(f));
  if (held.length <= MAX_FILE_MOUNTS) {
    for (const f of held) out.add(f);
    return [...out].sort();
  }
  const wholeDir = new Map<string, boolean>();
  const isWhole = (dir: string) => {
    let v = wholeDir.get(dir);
    if (v === undefined) wholeDir.set(dir, (v = set.isProtected(`${dir}/${ANY_CHILD}`)));
    return v;
  };
  for (const f of held) {
    const parts = f.split('/');
    let chosen = f;
    for (let i = 1; i < parts.length; i++) {
      const dir = parts.slice(0, i).join('/');
      if (isWhole(dir)) {
        chosen = dir;
        break;
      }
    }
    out.add(chosen);
  }
  return [...out].sort();
}
