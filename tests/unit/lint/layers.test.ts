/**
 * The layer table in eslint.config.js, through ESLint's own API and the repo's config: an import
 * back up the table is reported at the line, and the same file's allowed imports are not.
 */
import { ESLint } from 'eslint';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/** The layer rule's findings for `code` as if it were the file at `path` (below the repo root). */
async function layerProblems(path: string, code: string): Promise<string[]> {
  // only this rule, and without type information: the probe is no file the TypeScript project holds
  const eslint = new ESLint({
    cwd: ROOT,
    overrideConfig: { languageOptions: { parserOptions: { projectService: false } } },
    ruleFilter: ({ ruleId }) => ruleId === 'kiln/layers',
  });
  const [result] = await eslint.lintText(code, { filePath: `${ROOT}${path}` });
  const problems = result!.messages.filter((m) => m.ruleId === 'kiln/layers' || m.fatal);
  return problems.map((m) => `${m.line}: ${m.message}`);
}

describe('the layer table', () => {
  it('reports an activity that imports the client; control: its import of the store is not', async () => {
    const code = [
      "import { stateDir } from '../store/run-files.js';",
      "import { readState } from '../client/runs.js';",
      'export const x = [stateDir, readState];',
      '',
    ].join('\n');
    const problems = await layerProblems('src/activities/layer-probe.ts', code);
    expect(problems).toEqual([expect.stringMatching(/^2: src\/activities may not import src\/client \(client\/runs\)/)]);
  });

  it('resolves the path, not its text: one level deeper, ../ is the same folder', async () => {
    const back = await layerProblems('src/cli/commands/layer-probe.ts', "export { kilnRun } from '../../workflows/run.js';\n");
    expect(back).toEqual([]);
    const up = await layerProblems('src/process/layer-probe.ts', "export { findShell } from '../sandbox/index.js';\n");
    expect(up).toEqual([expect.stringMatching(/^1: src\/process may not import src\/sandbox/)]);
  });

  it('lets workflow code import activities as types only', async () => {
    const typed = await layerProblems(
      'src/workflows/layer-probe.ts',
      "import type { createActivities } from '../activities/index.js';\nexport type A = typeof createActivities;\n",
    );
    expect(typed).toEqual([]);
    const value = await layerProblems(
      'src/workflows/layer-probe.ts',
      "import { createActivities } from '../activities/index.js';\nexport const a = createActivities;\n",
    );
    expect(value).toEqual([expect.stringMatching(/^1: src\/workflows may not import src\/activities/)]);
  });

  it('reports worker.ts or embedded.ts importing the CLI; control: the client and the activities are theirs', async () => {
    const code = [
      "import { startRun } from './client/runs.js';",
      "import { createActivities } from './activities/index.js';",
      "import { main } from './cli/main.js';",
      'export const x = [startRun, createActivities, main];',
      '',
    ].join('\n');
    const problems = await layerProblems('src/layer-probe.ts', code);
    expect(problems).toEqual([expect.stringMatching(/^3: src\/ \(its top-level files\) may not import src\/cli/)]);
  });

  it('reports a folder with no row, so a new folder is placed in the table', async () => {
    const problems = await layerProblems('src/newfolder/layer-probe.ts', 'export const x = 1;\n');
    expect(problems).toEqual([expect.stringMatching(/^1: src\/newfolder has no row in the layer table/)]);
  });
});
