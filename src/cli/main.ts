/**
 * `kiln`: start runs, follow them, answer approvals, read what they left. One top-level error
 * handler prints one line (the stack only with KILN_DEBUG=1); bad input exits 2.
 */
import { Command, CommanderError, Option } from 'commander';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { connectClient } from '../temporal/connection.js';
import { exitCodeFor, UsageError } from '../shared/errors.js';
import { buildRunInput, type RunFlags } from '../client/run-options.js';
import {
  ensureExists,
  follow,
  formatLine,
  formatSummary,
  handleFor,
  jsonSummary,
  outcome,
  readState,
  sendApproval,
  sendHuman,
  startRun,
  hasKilnSearchAttributes,
  formatEvents,
  startInput,
  waitingRuns,
  webUiUrl,
  workflowUrl,
} from '../client/runs.js';
import { WORKFLOW_TYPE } from '../shared/constants.js';
import { KilnPhase, KilnRepo } from '../temporal/search-attributes.js';
import { artifactsDir } from '../shared/paths.js';

const collect = (v: string, prev: string[] = []) => [...prev, v];

export function buildProgram(out: (s: string) => void = (s) => process.stdout.write(s + '\n')): Command {
  const program = new Command('kiln')
    .description('Run AI coding tasks as durable Temporal workflows')
    .exitOverride()
    .configureOutput({ writeErr: (s) => process.stderr.write(s), outputError: (s, write) => write(oneLineError(s)) })
    // the command list shows name, arguments and a one-line summary; `kiln CMD --help` has the rest
    .configureHelp({ subcommandTerm: (c) => [c.name(), ...c.registeredArguments.map((a) => (a.required ? `<${a.name()}>` : `[${a.name()}]`))].join(' ') });

  program
    .command('setup')
    .summary('Build/cache the Temporal CLI, check bubblewrap')
    .description('Provision what Kiln needs on this machine: the Temporal CLI (built once, cached) and bubblewrap')
    .action(async () => {
      const { runSetup } = await import('./commands/setup.js');
      await runSetup(out);
    });

  program
    .command('dev')
    .summary('Start a local Temporal server, Web UI and worker')
    .description('Start the embedded Temporal dev server (SQLite under KILN_HOME, Web UI) and a worker')
    .option('--no-worker', 'start only the server')
    .option('--port <n>', 'Temporal frontend port', '7233')
    .option('--ui-port <n>', 'Web UI port', '8233')
    .option('--db <file>', 'SQLite file (default: $KILN_HOME/temporal.db)')
    .action(async (o: { worker: boolean; port: string; uiPort: string; db?: string }) => {
      const { runDev } = await import('./commands/dev.js');
      await runDev({ worker: o.worker, port: Number(o.port), uiPort: Number(o.uiPort), db: o.db }, out);
    });

  program
    .command('worker')
    .summary('Run a worker against TEMPORAL_ADDRESS')
    .description('Run a worker against TEMPORAL_ADDRESS (workflows plus this host\'s activities)')
    .action(async () => {
      const { installQuietRuntime } = await import('./quiet-runtime.js');
      // a worker on its own keeps warnings (e.g. "server unreachable, retrying"); not state chatter
      installQuietRuntime('WARN');
      const { startWorker, sandboxStatus } = await import('../worker.js');
      await connectClient().then(({ connection }) => connection.close());
      const w = await startWorker();
      out(`kiln worker ready (host queue ${w.hostQueue}); Ctrl-C stops it`);
      out(await sandboxStatus());
      // the SDK stops polling on SIGINT by itself, but its connection would keep Node running
      let stopping: Promise<void> | undefined;
      const shutdown = () => (stopping ??= w.shutdown());
      const stop = () => {
        out('stopping: finishing the tasks in hand…');
        void shutdown();
      };
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
      await w.run;
      await shutdown();
    });

  const run = program
    .command('run')
    .summary('Start a run on a repo and follow it live')
    .description('Start a run on a repo and follow it live (exits 0 only when it succeeds)')
    .requiredOption('--repo <dir>', 'the git repository to work on')
    .requiredOption('--goal <text>', 'what the change should achieve')
    .option('--check <cmd>', 'a check command (repeatable; default: .kiln/config or AGENTS.md)', collect)
    .option('--setup <cmd>', 'a setup command run once in the fresh worktree, with network (repeatable)', collect)
    .option('--model <m>', 'model id, or scripted:FILE for the offline scripted model')
    .option('--id <key>', 'run id and idempotency key: the same id attaches to the existing run')
    .option('--base <ref>', 'commit to start from (default HEAD)')
    .addOption(new Option('--sandbox <mode>', 'command sandbox; "off" runs commands unsandboxed (unsafe)').choices(['bwrap', 'off']))
    .addOption(new Option('--approval-mode <mode>', 'strict: ask for any command not allowlisted; auto: never ask, deny instead').choices(['strict', 'default', 'auto']))
    .option('--allow-test-edits', 'let the coder change protected test files')
    .option('--unverified', 'allow the run to succeed when the repo has no checks (otherwise it waits for a person)')
    .option('--approval-timeout <d>', 'how long an approval may wait before the run needs a person (e.g. 30m, 1d)')
    .option('--human-timeout <d>', 'how long needs_human waits before the run ends blocked')
    .option('--max-turns <n>', 'budget: model turns')
    .option('--max-tokens <n>', 'budget: total tokens')
    .option('--max-usd <n>', 'budget: cost in USD')
    .option('--max-wall <d>', 'budget: wall time')
    .option('--max-output-tokens <n>', 'max tokens per model reply')
    .option('--temperature <t>', 'sampling temperature')
    .option('--heartbeat-timeout <d>', 'how soon a dead worker is noticed')
    .option('--command-timeout <d>', 'longest a single command may run')
    .option('--detach', 'start and return the run id without following')
    .option('--json', 'make the last line of output a JSON summary');
  run.action(async (o: RunFlags & { detach?: boolean; json?: boolean }) => {
    const input = await buildRunInput(o);
    const { client, connection } = await connectClient();
    try {
      input.searchAttributes = await hasKilnSearchAttributes(client);
      const { handle, attached } = await startRun(client, input);
      const ui = webUiUrl();
      if (o.detach) {
        out(o.json ? JSON.stringify({ runId: input.runId, workflowId: input.runId, attached }) : `${attached ? 'attached to' : 'started'} ${input.runId}`);
        return;
      }
      out(`${attached ? 'attached to' : 'started'} ${input.runId}${input.model.startsWith('scripted:') ? '  [SCRIPTED model: not a real model run]' : ''}`);
      if (input.allowUnverified) out('UNVERIFIED allowed (--unverified): with no checks, this run may succeed without verification (written to audit.jsonl)');
      if (ui) out(`Web UI: ${workflowUrl(ui, input.runId)}`);
      out(`(Ctrl-C stops following, not the run: \`kiln status ${input.runId}\`, \`kiln wait ${input.runId}\`, \`kiln cancel ${input.runId}\`)`);
      await follow(handle, { print: out, uiUrl: ui });
      const r = await outcome(handle, input);
      out(formatSummary(r));
      if (o.json) out(jsonSummary(r));
      if (r.state !== 'succeeded') process.exitCode = 1;
    } finally {
      await connection.close();
    }
  });

  program
    .command('status')
    .summary("Show a run's phase, plan, files, approvals, budget")
    .description('Show a run\'s phase, attempt, plan, touched files, pending approvals and budget')
    .argument('<run>')
    .option('--json', 'print the state as JSON')
    .action(async (runId: string, o: { json?: boolean }) => {
      await withRun(runId, async (handle) => {
        const st = await readState(handle);
        if (!st) {
          const d = await handle.describe();
          // a finished run still has its result in history, worker or not
          const r = d.status.name === 'RUNNING' ? undefined : await outcome(handle).catch(() => undefined);
          if (o.json) return out(JSON.stringify({ runId, status: d.status.name, state: null, result: r ?? null }));
          if (r) return out(`${formatSummary(r)}\n  (no worker answers queries right now: this is the run's result)`);
          return out(`${runId}: ${d.status.name} (no worker answers queries right now; start one with \`kiln worker\` or \`kiln dev\`)`);
        }
        if (o.json) return out(JSON.stringify(st));
        const { formatStatus } = await import('./commands/status.js');
        out(formatStatus(st, webUiUrl()));
      });
    });

  program
    .command('list')
    .summary('List recent runs')
    .description('List recent runs')
    .option('--limit <n>', 'how many', '20')
    .action(async (o: { limit: string }) => {
      const { client, connection } = await connectClient();
      try {
        const limit = Number(o.limit);
        if (!Number.isInteger(limit) || limit <= 0) throw new UsageError(`--limit ${o.limit}: expected a positive whole number`);
        let n = 0;
        for await (const w of client.workflow.list({ query: `WorkflowType = '${WORKFLOW_TYPE}'` })) {
          if (n === 0) out(`${'RUN'.padEnd(36)} ${'STATUS'.padEnd(11)} ${'PHASE'.padEnd(17)} ${'STARTED'.padEnd(24)} REPO`);
          const phase = w.typedSearchAttributes.get(KilnPhase) ?? '-';
          const repo = w.typedSearchAttributes.get(KilnRepo) ?? '';
          out(`${w.workflowId.padEnd(36)} ${w.status.name.padEnd(11)} ${phase.padEnd(17)} ${w.startTime.toISOString().padEnd(24)} ${repo}`.trimEnd());
          if (++n >= limit) break;
        }
        if (n === 0) out('no runs yet: start one with `kiln run --repo DIR --goal TEXT`');
      } finally {
        await connection.close();
      }
    });

  program
    .command('wait')
    .summary('Wait for a run to end; print its outcome')
    .description('Wait for a run to end and print its outcome (exits 0 only when it succeeded)')
    .argument('<run>')
    .option('--json', 'print the outcome as JSON')
    .action(async (runId: string, o: { json?: boolean }) => {
      await withRun(runId, async (handle) => {
        const r = await outcome(handle);
        out(o.json ? jsonSummary(r) : formatSummary(r));
        if (r.state !== 'succeeded') process.exitCode = 1;
      });
    });

  program
    .command('approve')
    .summary('Approve a pending tool call')
    .description('Approve a pending tool call (the only pending one if no id is given)')
    .argument('[run]', 'the run (default: the only run waiting for an approval)')
    .argument('[approval]', 'the approval id (default: the run\'s only pending approval)')
    .option('--by <name>', 'who approves (recorded in audit.jsonl)', process.env.USER || 'cli')
    .option('--note <text>', 'a note for the audit log')
    .option('--for-run', 'approve this kind of call for the rest of the run')
    .action(async (runArg: string | undefined, approvalId: string | undefined, o: { by: string; note?: string; forRun?: boolean }) => {
      const runId = runArg ?? (await onlyWaitingRun());
      await withRun(runId, async (handle, client) => {
        const id = approvalId ?? (await onlyPending(handle));
        out(await sendApproval(client, handle, { approvalId: id, approve: true, scope: o.forRun ? 'run' : 'once', by: o.by, note: o.note }));
      });
    });

  program
    .command('reject')
    .summary('Reject a pending tool call, with a reason')
    .description('Reject a pending tool call; the reason goes back to the model')
    .argument('<run>')
    .argument('<approval>')
    .requiredOption('--reason <text>', 'why (the model reads it)')
    .option('--by <name>', 'who rejects', process.env.USER || 'cli')
    .action(async (runId: string, approvalId: string, o: { reason: string; by: string }) => {
      await withRun(runId, async (handle, client) => {
        out(await sendApproval(client, handle, { approvalId, approve: false, reason: o.reason, by: o.by }));
      });
    });

  for (const [name, action, summary, desc] of [
    ['hint', 'hint', 'Give a waiting run a hint; it tries once more', 'Give a run that needs a person a hint and let it try once more'],
    ['accept', 'accept', 'Accept a waiting run\'s patch as it is', 'Keep the patch of a run that needs a person as it is (succeeded, accepted by you)'],
    ['abandon', 'abandon', 'End a waiting run as blocked', 'End a run that needs a person as blocked'],
  ] as const) {
    const c = program.command(name).summary(summary).description(desc).argument('<run>');
    if (action === 'hint') c.argument('<text>');
    c.option('--by <name>', 'who decides (recorded in audit.jsonl)', process.env.USER || 'cli').action(async (runId: string, ...rest: unknown[]) => {
      const text = action === 'hint' ? (rest[0] as string) : undefined;
      const o = rest[action === 'hint' ? 1 : 0] as { by: string };
      await withRun(runId, async (handle, client) => {
        out(await sendHuman(client, handle, { action, text, by: o.by }));
      });
    });
  }

  program
    .command('cancel')
    .summary('Cancel a run (worktree removed, artifacts kept)')
    .description('Cancel a run: it stops, its worktree is removed, its artifacts are still written')
    .argument('<run>')
    .action(async (runId: string) => {
      await withRun(runId, async (handle) => {
        await handle.cancel();
        out(`cancellation requested for ${runId}`);
      });
    });

  program
    .command('logs')
    .summary("Print a run's event log")
    .description('Print a run\'s event log (events.jsonl), or the live log if the worker is elsewhere')
    .argument('<run>')
    .option('--repo <dir>', 'the repo, to read the artifacts directly')
    .option('--json', 'print events.jsonl as it is (every event, one JSON object a line)')
    .action(async (runId: string, o: { repo?: string; json?: boolean }) => {
      await withRun(runId, async (handle) => {
        const st = await readState(handle);
        const repo = o.repo ?? st?.repo ?? (await startInput(handle))?.repo;
        const text = repo ? await readFile(join(artifactsDir(repo, runId), 'events.jsonl'), 'utf8').catch(() => undefined) : undefined;
        if (text && o.json) return out(text.trimEnd());
        if (text) return formatEvents(text).forEach((l) => out(l));
        if (st) return st.log.forEach((l) => out(o.json ? JSON.stringify(l) : formatLine(l)));
        throw new UsageError(`no log found for ${runId}: pass --repo DIR`);
      });
    });

  program
    .command('diff')
    .summary("Print a run's patch")
    .description('Print a run\'s patch against its base')
    .argument('<run>')
    .option('--repo <dir>', 'the repo, to read the artifacts directly')
    .action(async (runId: string, o: { repo?: string }) => {
      await withRun(runId, async (handle) => {
        const st = await readState(handle);
        const repo = o.repo ?? st?.repo ?? (await startInput(handle))?.repo;
        if (!repo) throw new UsageError(`cannot find the repo of ${runId}: pass --repo DIR`);
        const { currentPatch } = await import('./commands/diff.js');
        out(await currentPatch(repo, runId, st?.worktree, st?.baseCommit));
      });
    });

  program
    .command('demo')
    .summary('Run the bundled example end to end, no setup')
    .description('Run the bundled example end to end on an embedded Temporal server')
    .option('--yes', 'approve the approval the demo asks for automatically')
    .option('--json', 'make the last line of output a JSON summary')
    .option('--keep', 'keep the embedded server running afterwards for the Web UI')
    .action(async (o: { yes?: boolean; json?: boolean; keep?: boolean }) => {
      const { runDemo } = await import('./commands/demo.js');
      const ok = await runDemo(o, out);
      if (!ok) process.exitCode = 1;
    });

  program
    .command('eval')
    .summary('Run an evaluation suite and score every run')
    .description('Run an evaluation suite of scripted or real-model tasks and score every run')
    .option('--suite <dir>', 'the suite to run (default: the bundled one)')
    .option('--repeat <n>', 'runs per task', '3')
    .option('--model <m>', 'model id for every task (needs ANTHROPIC_API_KEY); default: each task\'s script')
    .option('--out <dir>', 'where the report goes (default: a new folder under $KILN_HOME/evals)')
    .option('--task <name>', 'only this task (repeatable)', collect)
    .option('--json', 'make the last line one JSON object with totals and runs')
    .action(async (o: { suite?: string; repeat: string; model?: string; out?: string; task?: string[]; json?: boolean }) => {
      const { runEval } = await import('./commands/eval.js');
      const ok = await runEval(o, out);
      if (!ok) process.exitCode = 1;
    });

  const policy = program.command('policy').summary('Check a tool call, redact text, test policy cases').description('Dry-run the policy: check a call, redact text, test a case file');
  policy
    .command('check')
    .description('Print the decision, rule and reason for one tool call as a run would see it')
    .requiredOption('--workspace <dir>', 'the workspace the call runs in')
    .requiredOption('--tool <name>', 'tool name')
    .requiredOption('--input <json>', 'tool input as JSON')
    .option('--mode <mode>', 'approval mode: strict, default or auto', 'default')
    .option('--json', 'print one JSON object')
    .action(async (o: { workspace: string; tool: string; input: string; mode: string; json?: boolean }) => {
      const { policyCheck } = await import('./commands/policy.js');
      await policyCheck(o, out);
    });
  policy
    .command('redact')
    .description('Redact secrets from stdin to stdout')
    .action(async () => {
      const { policyRedact } = await import('./commands/policy.js');
      await policyRedact();
    });
  policy
    .command('test')
    .description('Run a JSON-lines file of policy cases; prints mismatches and "N passed, M failed"')
    .argument('<file>')
    .option('--policy <file>', 'a policy config to test instead of the default')
    .option('--json', 'print the results as JSON')
    .action(async (file: string, o: { policy?: string; json?: boolean }) => {
      const { policyTest } = await import('./commands/policy.js');
      const ok = await policyTest(file, o, out);
      if (!ok) process.exitCode = 1;
    });

  const sandbox = program.command('sandbox').summary('Run a command in the sandbox as run_command would').description('Run commands exactly as run_command would');
  sandbox
    .command('exec')
    .description('Run one command in the sandbox (same limits and environment as a run) and exit with its code')
    .requiredOption('--workspace <dir>', 'the directory the command may write to')
    .option('--timeout <ms>', 'kill it after this many milliseconds', '120000')
    .addOption(new Option('--sandbox <mode>', 'bwrap or off').choices(['bwrap', 'off']).default('bwrap'))
    .argument('<cmd...>')
    .action(async (cmd: string[], o: { workspace: string; timeout: string; sandbox: 'bwrap' | 'off' }) => {
      const { runSandboxExec } = await import('../sandbox/index.js');
      const code = await runSandboxExec(
        { workspace: o.workspace, timeoutMs: Number(o.timeout), command: cmd, mode: o.sandbox },
        { stdout: (s) => process.stdout.write(s), stderr: (s) => process.stderr.write(s) },
      );
      process.exitCode = code;
    });

  return program;
}

async function withRun(
  runId: string,
  fn: (handle: ReturnType<typeof handleFor>, client: Awaited<ReturnType<typeof connectClient>>['client']) => Promise<void>,
): Promise<void> {
  const { client, connection } = await connectClient();
  try {
    const handle = handleFor(client, runId);
    await ensureExists(handle);
    await fn(handle, client);
  } finally {
    await connection.close();
  }
}

/** `kiln approve` with no run: the one run that waits for an approval, if there is exactly one. */
async function onlyWaitingRun(): Promise<string> {
  const { client, connection } = await connectClient();
  try {
    const runs = await waitingRuns(client);
    if (runs.length === 1) return runs[0]!;
    if (runs.length === 0) throw new UsageError('no run waits for an approval (see `kiln list`)');
    throw new UsageError(`${runs.length} runs wait for an approval (${runs.slice(0, 5).join(', ')}${runs.length > 5 ? ', …' : ''}): name one`);
  } finally {
    await connection.close();
  }
}

async function onlyPending(handle: ReturnType<typeof handleFor>): Promise<string> {
  const st = await readState(handle);
  if (!st) throw new UsageError('no worker answers right now, so the pending approval is unknown: name it (kiln approve RUN APPROVAL)');
  const ids = st.pendingApprovals.map((a) => a.id);
  if (ids.length === 1) return ids[0]!;
  if (ids.length === 0) throw new UsageError(`${st.runId} has no pending approval (phase: ${st.phase})`);
  throw new UsageError(`${st.runId} has ${ids.length} pending approvals (${ids.join(', ')}): name one`);
}

/** commander's "error: …" plus its suggestion lines → one line that says where help is. */
function oneLineError(msg: string): string {
  const text = msg.replace(/^error: /, '').split('\n').map((l) => l.trim()).filter(Boolean).join(' ');
  return `kiln: ${text} (see \`kiln --help\`)\n`;
}

export async function main(argv: string[] = process.argv): Promise<void> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      // help and version are not errors; commander already printed its message
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.help' || err.code === 'commander.version') return;
      process.exitCode = 2;
      return;
    }
    const code = exitCodeFor(err);
    const msg = err instanceof Error ? err.message : String(err);
    process.stderr.write(`kiln: ${msg.split('\n')[0]}\n`);
    if (process.env.KILN_DEBUG && err instanceof Error) process.stderr.write(`${err.stack}\n`);
    process.exitCode = code;
  }
}
