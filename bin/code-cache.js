// Loads a CommonJS bundle with V8's code cache kept beside it, so that a start-up neither parses
// the whole file nor compiles again the functions the last run compiled. Node 20 has no
// compile cache of its own (22.1+ has module.enableCompileCache, which bin/kiln.js turns on for
// everything else). `kiln run`, three times each at load 6: ~0.6 s without the cache, ~0.3 s
// with it (docs/bench.md).
import { createHash } from 'node:crypto';
import { readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import Module, { createRequire } from 'node:module';
import { dirname } from 'node:path';
import vm from 'node:vm';

export function requireCached(file) {
  const source = readFileSync(file, 'utf8');
  // V8 checks a cache against its Node, its flags and only the *length* of the source: the
  // bundle's own identity (rewritten by every build) is in the name, or a rebuilt bundle of the
  // same length would run the old one's code
  const { mtimeMs, size } = statSync(file);
  const key = createHash('sha256')
    .update(`${process.version}\0${process.execArgv.join(' ')}\0${mtimeMs}\0${size}`)
    .digest('hex')
    .slice(0, 16);
  const cacheFile = `${file}.${key}.cache`;
  let cachedData;
  try {
    cachedData = readFileSync(cacheFile);
  } catch {
    cachedData = undefined;
  }
  const script = new vm.Script(Module.wrap(source), {
    filename: file,
    cachedData,
    importModuleDynamically: vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
  });
  const m = new Module(file);
  m.filename = file;
  script.runInThisContext().call(m.exports, m.exports, createRequire(file), m, file, dirname(file));
  m.loaded = true;
  if (!cachedData || script.cachedDataRejected) {
    // written at exit: by then the functions this run compiled are in it too; best effort (a
    // shared install another user built is not ours to write), and atomic against a parallel run
    process.once('exit', () => {
      const tmp = `${cacheFile}.${process.pid}.tmp`;
      try {
        writeFileSync(tmp, script.createCachedData());
        renameSync(tmp, cacheFile);
      } catch {
        // no cache: the next start-up compiles, as this one did
        rmSync(tmp, { force: true });
      }
    });
  }
  return m.exports;
}
