/**
 * What an MCP server costs a run: the start of `@modelcontextprotocol/server-everything` (spawn,
 * `initialize`, `tools/list`) in its own bubblewrap sandbox, in one with a host list (the worker's
 * proxy and the forwarder in front of the server) and without one, and one `echo` call once it
 * runs. Median of `starts` starts and of 20 calls on each.
 *
 *   npm run build && node dist/bench/mcp-start.js [--starts 5]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { McpServers } from '../src/activities/mcp-servers.js';
import { createSandbox } from '../src/sandbox/index.js';

const NODE_MODULES = resolve('node_modules');
const EVERYTHING = join(NODE_MODULES, '@modelcontextprotocol/server-everything/dist/index.js');
const CALLS = 20;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function measure(mode: 'bwrap' | 'bwrap+hosts' | 'off', starts: number): Promise<string> {
  const sandbox = await createSandbox({ mode: mode === 'off' ? 'off' : 'bwrap' });
  const servers = new McpServers();
  const started: number[] = [];
  const calls: number[] = [];
  const dirs: string[] = [];
  for (let i = 0; i < starts; i++) {
    const dir = mkdtempSync(join(tmpdir(), 'kiln-bench-mcp-'));
    dirs.push(dir);
    const t0 = performance.now();
    const s = await servers.get({
      runId: `bench-${i}`,
      name: 'everything',
      config: {
        command: ['node', EVERYTHING, 'stdio'],
        env: {},
        worktree: 'none',
        readOnlyPaths: [NODE_MODULES],
        readOnlyTools: [],
        timeoutMs: 60_000,
        ...(mode === 'bwrap+hosts' ? { network: { hosts: ['registry.npmjs.org'] } } : {}),
      },
      worktree: dir,
      stateDir: dir,
      sandbox: async () => sandbox,
      warn: () => undefined,
      refused: () => undefined,
    });
    await s.client.listTools();
    started.push(performance.now() - t0);
    for (let j = 0; j < CALLS; j++) {
      const t1 = performance.now();
      await s.client.callTool({ name: 'echo', arguments: { message: 'x' } });
      calls.push(performance.now() - t1);
    }
  }
  await servers.stopAll();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  return `${mode}: start + tools/list median ${median(started).toFixed(0)} ms (max ${Math.max(...started).toFixed(0)}, n=${starts}); echo call median ${median(calls).toFixed(1)} ms (n=${calls.length})`;
}

const at = process.argv.indexOf('--starts');
const starts = at > 0 ? Number(process.argv[at + 1]) : 5;
for (const mode of ['bwrap', 'bwrap+hosts', 'off'] as const) console.log(await measure(mode, starts));
process.exit(0);
