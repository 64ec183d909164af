/**
 * A run that uses an MCP server's tool end to end under an approval, on the real dev server: the
 * scripted model (a test double for the model only) calls `mcp__everything__echo` of a real
 * `@modelcontextprotocol/server-everything` that the user's policy names; the worker starts it in
 * its sandbox, the policy asks, a person approves seeing the arguments, the answer reaches the model.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { outcome } from '../../src/client/runs.js';
import { approveUpdate } from '../../src/shared/messages.js';
import { repoWith, writeScript } from '../helpers/repo.js';
import { testInput } from '../helpers/run-input.js';
import { workflowTestEnv, type WorkflowTestEnv } from '../helpers/workflow-env.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const NODE_MODULES = join(ROOT, 'node_modules');
const EVERYTHING = join(NODE_MODULES, '@modelcontextprotocol/server-everything/dist/index.js');

let t: WorkflowTestEnv;
beforeAll(async () => {
  // the user's own policy names the server: it starts whatever the repo's trust
  process.env.KILN_HOME = mkdtempSync(join(tmpdir(), 'kiln-mcp-home-'));
  writeFileSync(
    join(process.env.KILN_HOME, 'policy.json'),
    JSON.stringify({ mcp: { servers: { everything: { command: ['node', EVERYTHING, 'stdio'], readOnlyPaths: [NODE_MODULES] } } } }),
  );
  t = await workflowTestEnv('kiln-mcp-tests');
});
afterAll(async () => {
  await t?.stop();
});

describe('an MCP tool in a run (scripted model)', () => {
  it('is offered namespaced, asks with its arguments, runs once approved, and is audited', async () => {
    const repo = repoWith({ 'a.txt': 'a\n' });
    const script = writeScript(join(repo, '..'), 'mcp-echo', {
      steps: [
        { tool_use: [{ name: 'mcp__everything__echo', input: { message: 'hello from a scripted run' } }] },
        {
          expect: { tool_result_contains: 'Echo: hello from a scripted run' },
          tool_use: [{ name: 'mcp__everything__no_such_tool', input: {} }],
        },
        {
          expect: { tool_result_contains: 'Unknown tool "mcp__everything__no_such_tool"' },
          tool_use: [
            { name: 'create_file', input: { path: 'ECHOED.md', content: 'echoed\n' } },
            { name: 'finish', input: { summary: 'echoed through MCP' } },
          ],
        },
      ],
    });
    const input = testInput({ repo, model: `scripted:${script}`, allowUnverified: true, heartbeatTimeoutMs: 15_000 });
    const handle = await t.start(input);
    const st = await t.waitFor(handle, (s) => s.pendingApprovals.length > 0);
    const pending = st.pendingApprovals[0]!;
    expect(pending).toMatchObject({
      tool: 'mcp__everything__echo',
      rule: 'mcp.default',
      summary: 'mcp__everything__echo {"message":"hello from a scripted run"}',
    });
    expect(pending.preview).toContain('"message": "hello from a scripted run"');
    await handle.executeUpdate(approveUpdate, { args: [{ approvalId: pending.id, approve: true, by: 'alice' }] });

    const r = await outcome(handle);
    expect(r.state, r.reason).toBe('succeeded');
    const audit = readFileSync(join(r.artifactsDir, 'audit.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(audit).toContainEqual(
      expect.objectContaining({ kind: 'approval', decision: 'approved', by: 'alice', what: 'mcp__everything__echo {"message":"hello from a scripted run"}' }),
    );
    const events = readFileSync(join(r.artifactsDir, 'events.jsonl'), 'utf8');
    expect(events).toMatch(/"type":"mcp","tools":\[[^\]]*"mcp__everything__echo"/);
    expect(events).toMatch(/"tool":"mcp__everything__echo","status":"done","ok":true/);
  }, 180_000);
});
