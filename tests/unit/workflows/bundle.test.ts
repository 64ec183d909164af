/**
 * The determinism boundary, built the way the worker builds it: the workflow bundle compiles from
 * the TypeScript source (no prior `npm run build`), and Temporal's bundler refuses a workflow that
 * imports a Node built-in — the same boundary eslint.config.js draws for src/workflows/**.
 */
import { bundleWorkflowCode } from '@temporalio/worker';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it, onTestFinished } from 'vitest';
import { WORKFLOWS_PATH } from '../../../src/worker.js';

const quiet = { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} };

// inside the package, so the bundler finds @temporalio/workflow the way it does for src/workflows;
// plain JavaScript, since the bundler compiles TypeScript only outside node_modules
const SCRATCH = fileURLToPath(new URL('../../../node_modules/.cache/', import.meta.url));

/** A one-file workflow module in a scratch folder; `body` is its source. */
function workflowFile(body: string): string {
  mkdirSync(SCRATCH, { recursive: true });
  const dir = mkdtempSync(join(SCRATCH, 'kiln-bundle-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'workflows.js');
  writeFileSync(file, body);
  return file;
}

describe('the workflow bundle', () => {
  it('builds from src/workflows (TypeScript, no dist/) and holds kilnRun', async () => {
    expect(WORKFLOWS_PATH).toMatch(/src\/workflows\/index\.ts$/);
    const { code } = await bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: quiet as never });
    expect(code).toContain('kilnRun');
  });

  it('refuses a workflow that imports node:fs, and accepts the same workflow reading nothing from the host', async () => {
    const allowed = workflowFile(`import { sleep } from '@temporalio/workflow';\nexport async function probe() { await sleep(1); return 'x'; }\n`);
    await expect(bundleWorkflowCode({ workflowsPath: allowed, logger: quiet as never })).resolves.toHaveProperty('code');

    const refused = workflowFile(
      `import { sleep } from '@temporalio/workflow';\nimport { readFileSync } from 'node:fs';\nexport async function probe() { await sleep(1); return readFileSync('/etc/hostname', 'utf8'); }\n`,
    );
    const said: string[] = [];
    const listening = { ...quiet, error: (m: string) => said.push(m), warn: (m: string) => said.push(m) } as never;
    await expect(bundleWorkflowCode({ workflowsPath: refused, logger: listening })).rejects.toThrow(/Webpack finished with errors/);
    expect(said.join('\n')).toMatch(/"node:fs" is not handled/);
  });
});
