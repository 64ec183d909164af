/**
 * JUnit XML, as pytest writes it with --junitxml (and most runners can). A testcase with a
 * <failure> or <error> failed, one with <skipped> did not run (pytest writes xfail the same way);
 * pytest leaves deselected tests out. pytest's ids are rebuilt from classname and name
 * ("tests.test_mod.TestGroup" + "test_x[1]" → "tests/test_mod.py::TestGroup::test_x[1]"), the
 * form its text output uses; a module that could not be collected is a testcase with an empty
 * classname, named by the module.
 */
import { XMLParser } from 'fast-xml-parser';
import { add, collectError, newResults, type TestResults } from './model.js';

interface Node {
  [k: string]: unknown;
}

const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: '',
  // failure bodies and stack traces are not needed: only whether the element is there
  stopNodes: ['*.failure', '*.error', '*.skipped', '*.system-out', '*.system-err', '*.properties'],
  isArray: (name) => name === 'testsuite' || name === 'testcase',
  parseAttributeValue: false,
  parseTagValue: false,
  processEntities: true,
  htmlEntities: false,
});

/** "tests.test_mod.TestGroup" → "tests/test_mod.py::TestGroup", classes being the capitalised tail */
function pytestId(classname: string, name: string, file: string | undefined): string {
  const parts = classname.split('.');
  let at = parts.findIndex((p) => /^[A-Z]/.test(p));
  if (file) {
    const mod = file.replace(/\.py$/, '').split('/');
    if (mod.every((m, i) => parts[i] === m)) at = mod.length;
  }
  if (at < 0) at = parts.length;
  if (at === 0) return [...parts, name].join('::');
  return [`${parts.slice(0, at).join('/')}.py`, ...parts.slice(at), name].join('::');
}

const str = (v: unknown) => (typeof v === 'string' ? v : typeof v === 'number' ? String(v) : '');

export function parseJunit(xml: string): TestResults | undefined {
  let doc: Node;
  try {
    doc = parser.parse(xml) as Node;
  } catch {
    return undefined;
  }
  const top = (doc.testsuites ?? doc) as Node;
  const suites = top.testsuite as Node[] | undefined;
  if (!Array.isArray(suites)) return undefined;
  const r = newResults();
  const isPytest = str(top.name).startsWith('pytest') || suites.some((s) => str(s.name) === 'pytest');
  r.formats.push(isPytest ? 'pytest junit' : 'junit');
  const walk = (suite: Node, path: string[]) => {
    const here = isPytest ? path : [...path, str(suite.name)].filter(Boolean);
    for (const tc of (suite.testcase as Node[] | undefined) ?? []) {
      const name = str(tc.name);
      const classname = str(tc.classname);
      const failed = 'failure' in tc || 'error' in tc;
      if (isPytest && !classname) {
        // a whole module: failed to collect, or skipped at import
        const mod = `${name.replace(/\./g, '/')}.py`;
        if (!failed) {
          add(r, mod, 'skip');
          r.skipped++;
          continue;
        }
        collectError(r, mod);
        r.failed++;
        continue;
      }
      const id = isPytest ? pytestId(classname, name, str(tc.file) || undefined) : [...here, name].join(' > ');
      const status = failed ? 'fail' : 'skipped' in tc ? 'skip' : 'pass';
      add(r, id, status);
      if (status === 'pass') r.passed++;
      else if (status === 'fail') r.failed++;
      else r.skipped++;
    }
    for (const inner of (suite.testsuite as Node[] | undefined) ?? []) walk(inner, here);
  };
  for (const s of suites) walk(s, []);
  return r;
}
