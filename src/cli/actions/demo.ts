/**
 * `kiln demo`: the bundled example end to end — a temporary git copy of examples/revoked-session,
 * the embedded Temporal server and a worker in this process, one approval, the patch and the
 * artifacts at the end. With ANTHROPIC_API_KEY set the real model does the work; otherwise the
 * scripted model does, and every line that shows the run says so.
 */
import { settings } from '../../settings.js';
import { git as runGit } from '../../git/run.js';
import { cp, mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { kilnHome, startEmbedded } from '../../embedded.js';
import { buildRunInput } from '../../client/run-options.js';
import { trustRepo } from '../../policy/trust.js';
import { follow, formatSummary, hasKilnSearchAttributes, jsonSummary, outcome, sendApproval, startRun } from '../../client/runs.js';

export const EXAMPLES_DIR = fileURLToPath(new URL('../../../../examples/', import.meta.url));
const GOAL =
  'getSession returns revoked sessions: it must ignore revoked ones and return the newest active session. The test "should reject revoked session" fails.';

export async function runDemo(o: { yes?: boolean; json?: boolean; keep?: boolean }, out: (s: string) => void): Promise<boolean> {
  const repo = await makeExampleRepo();
  // Kiln's own bundled example: its AGENTS.md checks are trusted as if the user ran `kiln trust`
  trustRepo(repo, kilnHome());
  const real = Boolean(process.env.ANTHROPIC_API_KEY);
  const model = real ? undefined : `scripted:${join(EXAMPLES_DIR, 'scripts', 'revoked-session.json')}`;
  const input = await buildRunInput({ repo, goal: GOAL, model, heartbeatTimeout: '10s' });
  out(`example repo: ${repo} (a fresh git copy of examples/revoked-session)`);
  out(
    real
      ? `model: ${input.model} (real Anthropic API)`
      : `model: SCRIPTED (no ANTHROPIC_API_KEY): a scripted ${settings().scriptedWire === 'openai' ? 'OpenAI-compatible (Chat Completions)' : 'Anthropic-compatible'} server plays the model; the worktree, policy, sandbox, commands and tests are real`,
  );

  const env = await startEmbedded({ dbFile: join(kilnHome(), 'demo', `${input.runId}.db`), worker: true, log: out });
  out(`Temporal dev server ${env.address} · Web UI ${env.uiUrl}/namespaces/default/workflows/${input.runId}`);
  try {
    input.searchAttributes = await hasKilnSearchAttributes(env.client);
    const { handle } = await startRun(env.client, input);
    out(`started ${input.runId}${real ? '' : '  [SCRIPTED model]'}`);
    await follow(handle, {
      print: out,
      uiUrl: env.uiUrl,
      onApproval: async (a) => {
        if (!o.yes) {
          out('     (waiting for you: run the approve command above in another terminal, or approve in the Web UI)');
          return;
        }
        out(`     --yes: approving ${a.id}`);
        out(`     ${await sendApproval(env.client, handle, { approvalId: a.id, approve: true, by: 'kiln demo --yes', note: 'auto-approved by --yes' })}`);
      },
    });
    const r = await outcome(handle, input);
    const patch = await readFile(r.patchPath, 'utf8').catch(() => '');
    out('\n--- patch.diff ---');
    out(patch.trimEnd() || '(empty)');
    out('------------------');
    out(formatSummary(r));
    out(`  events:    ${join(r.artifactsDir, 'events.jsonl')}`);
    out(`  audit:     ${join(r.artifactsDir, 'audit.jsonl')}`);
    out(`  metrics:   ${join(r.artifactsDir, 'metrics.json')}`);
    out(`  tests:     ${join(r.artifactsDir, 'tests.log')}`);
    out(`  Web UI:    ${env.uiUrl}/namespaces/default/workflows/${input.runId}`);
    if (!o.keep) out('  (the embedded server stops with the demo: add --keep to browse the run in the Web UI)');
    if (o.keep) {
      out('--keep: the server and worker stay up for the Web UI; Ctrl-C stops them.');
      await new Promise<void>((resolve) => process.once('SIGINT', () => resolve()));
    }
    if (o.json) out(jsonSummary(r));
    return r.state === 'succeeded';
  } finally {
    await env.stop();
  }
}

async function makeExampleRepo(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'kiln-demo-'));
  const repo = join(dir, 'revoked-session');
  await cp(join(EXAMPLES_DIR, 'revoked-session'), repo, { recursive: true });
  const git = (...args: string[]) => runGit(repo, args, { identity: { name: 'Kiln demo', email: 'demo@kiln.local' } });
  await git('init', '-q', '-b', 'main');
  await git('add', '-A');
  await git('commit', '-q', '-m', 'example: session lookup');
  return repo;
}
