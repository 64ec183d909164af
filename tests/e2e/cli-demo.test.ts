/**
 * `kiln demo --yes --json`: the bundled example end to end with nothing set up — an embedded
 * Temporal server and an in-process worker, the scripted model (no API key), one approval.
 */
import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { WORKER_NOISE, kiln, lastLine, portOpen, userEnv } from './cli.js';

describe('kiln demo', () => {
  it('runs the example: patch, artifact paths, Web UI link, SCRIPTED, JSON summary last', async () => {
    const r = await kiln(['demo', '--yes', '--json'], { env: userEnv(), timeoutMs: 150_000 });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const out = r.stdout;
    const summary = JSON.parse(lastLine(out)) as { runId: string; state: string; scripted: boolean; patchPath: string; artifactsDir: string };
    expect(summary.state).toBe('succeeded');
    expect(summary.scripted).toBe(true);
    expect(out).toMatch(/model: SCRIPTED/);
    expect(out).toMatch(/--yes: approving ap-1/);

    const patch = out.split('--- patch.diff ---')[1]?.split('------------------')[0] ?? '';
    expect(patch).toMatch(/^\+\+\+ b\/src\/session\.js$/m);
    expect(patch.trim()).toBe(readFileSync(summary.patchPath, 'utf8').trim());

    for (const name of ['events', 'audit', 'metrics', 'tests']) {
      const m = new RegExp(`^  ${name}: +(\\S+)$`, 'm').exec(out);
      expect(m, name).not.toBeNull();
      expect(existsSync(m![1]!), m![1]).toBe(true);
    }
    const ui = /^ {2}Web UI: +(http:\/\/127\.0\.0\.1:(\d+)\/namespaces\/default\/workflows\/(\S+))$/m.exec(out);
    expect(ui, out).not.toBeNull();
    expect(ui![3]).toBe(summary.runId);
    // the embedded server went away with the demo
    expect(await portOpen(Number(ui![2]))).toBe(false);
    // the in-process worker's SDK logging stays out of the live view
    expect(out + r.stderr).not.toMatch(WORKER_NOISE);
  });
});
