import { bundleWorkflowCode } from '@temporalio/worker';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));

/** Collects what webpack reports, so a refusal can be checked for its reason. */
function recordingLogger() {
  const lines: string[] = [];
  const keep = (msg: string, meta?: unknown) => lines.push(`${msg} ${meta ? JSON.stringify(meta) : ''}`);
  return { lines, logger: { trace() {}, debug() {}, info() {}, warn: keep, error: keep, log: keep } as never };
}

describe('the tool catalog in the workflow sandbox', () => {
  it('bundles into workflow code', async () => {
    const { code } = await bundleWorkflowCode({ workflowsPath: fixture('catalog-workflow.ts'), logger: recordingLogger().logger });
    expect(code).toContain('catalogProbe');
    expect(code).toContain('update_plan');
  });

  it('while the full registry, which reaches the file system, is refused', async () => {
    const { lines, logger } = recordingLogger();
    await expect(bundleWorkflowCode({ workflowsPath: fixture('registry-workflow.ts'), logger })).rejects.toThrow(/Webpack finished with errors/);
    expect(lines.join('\n')).toMatch(/node:|'fs'|"fs"|disallowed/i);
  });
});
