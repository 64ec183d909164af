/**
 * The runtime the tests judge with stays the base's: code loaded into a check's processes before
 * anything of the repo's, from a folder the sandbox binds read-only.
 *
 * - Node: every export of node:assert (and assert/strict) becomes a fixed accessor. A replacement
 *   by code under test does not take, and is reported the moment it is tried.
 * - Python: unittest is imported from the toolchain before the checkout is on sys.path, so a
 *   file of the repo cannot take its name; at exit, any function of unittest, pytest or pluggy
 *   (module attributes and class members) whose code lives in the checkout was put there at run
 *   time, and is reported.
 *
 * A report is one line on stderr starting with INTEGRITY_MARK; the verifier fails the check on
 * it. A process can still tamper with what it holds in other ways (this is a tripwire for the
 * plain door, not a wall); the counterfactual run and the harness classification back it up.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export const INTEGRITY_MARK = 'kiln-integrity:';

const NODE_PRELOAD = String.raw`'use strict';
(function kilnIntegrity() {
  const fs = require('fs');
  const say = (what) => { try { fs.writeSync(2, '\n${INTEGRITY_MARK} ' + what + '\n'); } catch {} };
  const guard = (mod, label) => {
    if (!mod || (typeof mod !== 'object' && typeof mod !== 'function')) return;
    for (const key of Object.getOwnPropertyNames(mod)) {
      const d = Object.getOwnPropertyDescriptor(mod, key);
      if (!d || !d.configurable || !('value' in d) || typeof d.value !== 'function') continue;
      const value = d.value;
      Object.defineProperty(mod, key, {
        configurable: false,
        enumerable: d.enumerable,
        get() { return value; },
        set() { say(label + '.' + key + ' was replaced at run time (process ' + process.pid + ')'); },
      });
    }
    Object.preventExtensions(mod);
  };
  const assert = require('assert');
  guard(assert, 'node:assert');
  try { const strict = require('assert/strict'); if (strict !== assert) guard(strict, 'node:assert/strict'); } catch {}
})();
`;

const PY_SITECUSTOMIZE = String.raw`# Loaded by Python before the checkout is on sys.path (see Kiln's checks/integrity.ts).
import atexit as _atexit, os as _os, sys as _sys, types as _types

def _kiln_integrity():
    import unittest  # from the toolchain: a file of the repo cannot take the name now
    root = _os.path.realpath(_os.environ.get('KILN_CHECKOUT') or _os.getcwd()) + _os.sep
    # the checkout's own files (git's): what setup installed into it (.venv) is the toolchain
    listed = _os.environ.get('KILN_CHECKOUT_FILES')
    own = None
    if listed:
        with open(listed, 'rb') as f:
            own = set(p.decode('utf-8', 'surrogateescape') for p in f.read().split(b'\0') if p)

    def in_checkout(fn):
        code = getattr(fn, '__code__', None)
        name = getattr(code, 'co_filename', '') if code else ''
        # frozen and built-in code has names like '<frozen genericpath>': never the checkout's
        if not _os.path.isabs(name):
            return False
        real = _os.path.realpath(name)
        if not real.startswith(root):
            return False
        return own is None or real[len(root):] in own

    def check():
        found = []
        for modname, mod in list(_sys.modules.items()):
            top = modname.split('.')[0]
            if top not in ('unittest', '_pytest', 'pytest', 'pluggy') or not isinstance(mod, _types.ModuleType):
                continue
            for key, value in list(vars(mod).items()):
                if in_checkout(value):
                    found.append('%s.%s' % (modname, key))
                elif isinstance(value, type) and value.__module__ == modname:
                    for k, v in list(vars(value).items()):
                        if in_checkout(getattr(v, '__func__', v)):
                            found.append('%s.%s.%s' % (modname, key, k))
        for what in found[:20]:
            _sys.stderr.write('\n${INTEGRITY_MARK} %s was replaced at run time by code in the checkout (process %d)\n' % (what, _os.getpid()))
        try:
            _sys.stderr.flush()
        except Exception:
            pass

    _atexit.register(check)

try:
    _kiln_integrity()
except Exception:
    pass
`;

/**
 * Writes the preloads into `hostDir` (to be bound read-only, seen as `sandboxDir` by the check)
 * and returns the variables that load them; `checkout` is the tree under test as the check sees it,
 * with git's files in it (code of those files in a runner is the tampering; what setup installed
 * into the checkout, such as a virtualenv, is the toolchain).
 */
export async function integrityEnv(hostDir: string, sandboxDir: string, checkout?: { dir: string; files: string[] }): Promise<Record<string, string>> {
  await mkdir(join(hostDir, 'python'), { recursive: true });
  if (checkout) await writeFile(join(hostDir, 'checkout-files'), checkout.files.join('\0'));
  await writeFile(join(hostDir, 'node-preload.cjs'), NODE_PRELOAD);
  await writeFile(join(hostDir, 'python', 'sitecustomize.py'), PY_SITECUSTOMIZE);
  return {
    NODE_OPTIONS: `--require ${join(sandboxDir, 'node-preload.cjs')}`,
    PYTHONPATH: join(sandboxDir, 'python'),
    ...(checkout ? { KILN_CHECKOUT: checkout.dir, KILN_CHECKOUT_FILES: join(sandboxDir, 'checkout-files') } : {}),
  };
}

/** What the preloads reported in a check's output. */
export function integrityFindings(output: string): string[] {
  const found = new Set<string>();
  // a runner may prefix a child's stderr (node:test's `# `): the mark counts anywhere on its line
  for (const m of output.matchAll(new RegExp(`${INTEGRITY_MARK} (.+)$`, 'gm'))) found.add(m[1]!.replace(/ \(process \d+\)$/, '').trim());
  return [...found].slice(0, 20);
}
