/**
 * `kiln run`: start a run and follow it live. Its own module (and, built, its own bundle that
 * bin/kiln.js loads for `kiln run`): the first model request waits for this process to load the
 * Temporal client, and one file loads in about half the time of the few hundred it is made of.
 */
import { Option, type Command } from 'commander';
import { readFile } from 'node:fs/promises';
import type { RunFlags } from '../../client/run-options.js';
import { UsageError } from '../../shared/errors.js';
import { colourOn, paintSummary } from '../colour.js';
import { collect } from '../program.js';

export function addRunCommand(program: Command, out: (s: string) => void): void {
  const run = withLimitsAndAttempts(
    program
      .command('run')
      .summary('Start a run on a repo and follow it live')
      .description('Start a run on a repo and follow it live (exits 0 only when it succeeds)')
      .requiredOption('--repo <dir>', 'the git repository to work on')
      .option('--goal <text>', 'what the change should achieve ("-" reads it from stdin)')
      .option('--goal-file <file>', 'read the goal from a file (for long goals)')
      .option('--check <cmd>', 'a check command (repeatable; default: .kiln/config or AGENTS.md)', collect)
      .option('--setup <cmd>', 'a setup command run once in the fresh worktree, with network (repeatable)', collect)
      .option('--model <m>', 'model id, or scripted:FILE for the offline scripted model')
      .option('--id <key>', 'run id and idempotency key: the same id attaches to the existing run')
      .option('--base <ref>', 'commit to start from (default HEAD)')
      .option('--include-uncommitted', "start from the checkout's working tree: uncommitted and untracked files included (docs/uncommitted.md)")
      .addOption(new Option('--sandbox <mode>', 'command sandbox; "off" runs commands unsandboxed (unsafe)').choices(['bwrap', 'off']))
      .addOption(
        new Option(
          '--approval-mode <mode>',
          'strict: ask before any command that may write (a redirection or an output option counts) unless it is a check or allowlisted; auto: never ask, deny instead',
        ).choices(['strict', 'default', 'auto']),
      )
      .option('--allow-test-edits', 'let the coder change protected test files')
      .option(
        '--unverified',
        'with no checks, let the run succeed unverified (its end says UNVERIFIED); without it, such a run is refused before it starts (--detach: it waits for a person at the end)',
      )
      .option('--detach', 'start and return the run id without following')
      .option('--json', 'JSON lines on stdout: one event a line, the summary last (progress goes to stderr)')
      .addOption(
        new Option('--output-format <format>', 'text, or json: one JSON object with the outcome at the end').choices(['text', 'json']).default('text'),
      ),
  );
  run.action(async (o: RunFlags & { goalFile?: string; detach?: boolean; json?: boolean; outputFormat: 'text' | 'json'; includeUncommitted?: boolean }) => {
    // the Temporal client loads while git and the config files are read; a bad flag still fails first
    const temporal = Promise.all([import('../../temporal/connection.js'), import('../../client/runs.js')]);
    temporal.catch(() => undefined);
    o.goal = await readGoal(o);
    if (o.includeUncommitted && o.base)
      throw new UsageError('--include-uncommitted starts from HEAD plus the working tree: drop --base, or commit and use --base');
    const [{ buildRunInput }, { baseForRun }, { loadRepoConfig }, { shellQuote }, { describeRunSettings, loadRunSettings }, { kilnHomeDir }, noChecks] =
      await Promise.all([
        import('../../client/run-options.js'),
        import('../../client/uncommitted.js'),
        import('../../policy/repo-config.js'),
        import('../../sandbox/shell-quote.js'),
        import('../../policy/precedence.js'),
        import('../../policy/trust.js'),
        import('../../client/no-checks.js'),
      ]);
    const input = await buildRunInput(o);
    // the checks the run will have: --check, or the repo's, with AGENTS.md as the run's base holds
    // it (with --include-uncommitted that base is the checkout as it is)
    const readAgents = o.includeUncommitted || input.checks.length ? undefined : await noChecks.agentsAtBase(input.repo, input.base);
    const settings = await loadRunSettings(input.repo, {
      home: kilnHomeDir(),
      checks: input.checks,
      setup: input.setup,
      approvalMode: input.approvalMode,
      ...(readAgents ? { readAgents } : {}),
    });
    // followed, a run that nothing can verify is refused before anything starts; detached, it is
    // started as before and waits for a person at the end (a script may mean to answer it there)
    if (!o.detach && !settings.checks.length && !input.allowUnverified) throw noChecks.noChecksError(settings, input.repo, shellQuote);
    // machine-readable stdout: people's progress goes to stderr so `| jq` sees only JSON
    const machine = o.json || o.outputFormat === 'json';
    // with --detach stdout stays the run id alone, so the settings lines go to stderr too
    const say = machine || o.detach ? (s: string) => process.stderr.write(`${s}\n`) : out;
    const start = await baseForRun(input, !!o.includeUncommitted, (await loadRepoConfig(input.repo)).exclude, shellQuote);
    input.base = start.base;
    if (start.warning) process.stderr.write(`${start.warning}\n`);
    if (start.note) say(start.note);
    const [
      { connectClient: connect },
      { hasKilnSearchAttributes, startRun, startInput, webUiUrl, workflowUrl, Contact, follow, outcome, formatSummary, jsonSummary },
    ] = await temporal;
    const { client, connection } = await connect();
    try {
      // what this repo may decide, said before the run starts (the worker applies the same rules)
      for (const line of describeRunSettings(settings)) say(line);
      if (input.sandbox === 'off') say('sandbox: OFF requested — honoured only by a worker started with --allow-sandbox-off; others end the run blocked');
      input.searchAttributes = await hasKilnSearchAttributes(client);
      const { handle, attached } = await startRun(client, input);
      if (attached) {
        const before = await startInput(handle);
        if (before && before.goal !== input.goal) {
          process.stderr.write(
            `warning: run ${input.runId} already exists with another goal ("${before.goal.slice(0, 80)}"): attached to it; use a new --id for a new run\n`,
          );
        }
      }
      const ui = webUiUrl();
      if (o.detach) {
        if (machine) out(JSON.stringify({ type: 'started', runId: input.runId, workflowId: input.runId, attached }));
        else out(`${attached ? 'attached to' : 'started'} ${input.runId}`);
        return;
      }
      if (o.json) out(JSON.stringify({ type: 'started', runId: input.runId, attached, scripted: input.model.startsWith('scripted:') }));
      say(`${attached ? 'attached to' : 'started'} ${input.runId}${input.model.startsWith('scripted:') ? '  [SCRIPTED model: not a real model run]' : ''}`);
      if (input.allowUnverified) say('UNVERIFIED allowed (--unverified): with no checks, this run may succeed without verification (written to audit.jsonl)');
      if (ui) say(`Web UI: ${workflowUrl(ui, input.runId)}`);
      say(`(Ctrl-C stops following, not the run: \`kiln status ${input.runId}\`, \`kiln wait ${input.runId}\`, \`kiln cancel ${input.runId}\`)`);
      process.once('SIGINT', () => {
        process.stderr.write(
          `\nstopped following; run ${input.runId} goes on: \`kiln wait ${input.runId}\` re-attaches, \`kiln cancel ${input.runId}\` stops it\n`,
        );
        process.exit(130);
      });
      const contact = new Contact(input.runId, say);
      await follow(handle, { print: say, uiUrl: ui, contact, onLine: o.json ? (l) => out(JSON.stringify({ type: 'event', ...l })) : undefined });
      const r = await outcome(handle, input, contact);
      say(paintSummary(formatSummary(r), colourOn(machine ? process.stderr : process.stdout)));
      if (machine) out(o.json ? JSON.stringify({ type: 'result', ...JSON.parse(jsonSummary(r)) }) : jsonSummary(r));
      if (r.state !== 'succeeded') process.exitCode = 1;
    } finally {
      await connection.close();
    }
  });
}

/** --goal TEXT, --goal - (stdin) or --goal-file FILE; exactly one. */
async function readGoal(o: { goal?: string; goalFile?: string }): Promise<string> {
  if (o.goal !== undefined && o.goalFile !== undefined) throw new UsageError('give the goal once: --goal TEXT, --goal - (stdin) or --goal-file FILE');
  if (o.goalFile !== undefined) {
    const text = await readFile(o.goalFile, 'utf8').catch((err: NodeJS.ErrnoException) => {
      throw new UsageError(`--goal-file ${JSON.stringify(o.goalFile)}: ${err.code === 'ENOENT' ? 'no such file' : err.message}`);
    });
    if (!text.trim()) throw new UsageError(`--goal-file ${JSON.stringify(o.goalFile)} is empty`);
    return text.trim();
  }
  if (o.goal === '-') {
    if (process.stdin.isTTY) throw new UsageError('--goal -: type or pipe the goal on stdin (end with Ctrl-D)');
    const chunks: Buffer[] = [];
    for await (const c of process.stdin) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString('utf8').trim();
    if (!text) throw new UsageError('--goal -: stdin was empty');
    return text;
  }
  if (!o.goal?.trim()) throw new UsageError('--goal TEXT is required (or --goal-file FILE, or --goal - to read stdin): what the change should achieve');
  return o.goal;
}

/** The run's budgets and timeouts, its review and its parallel attempts. */
function withLimitsAndAttempts(cmd: Command): Command {
  return cmd
    .option('--approval-timeout <d>', 'how long an approval may wait before the run needs a person (e.g. 30m, 1d)')
    .option('--human-timeout <d>', 'how long needs_human waits before the run ends blocked')
    .option('--max-turns <n>', 'budget: model turns')
    .option('--max-tokens <n>', 'budget: total tokens')
    .option('--max-usd <n>', 'budget: cost in USD')
    .option('--max-wall <d>', 'budget: wall time')
    .option('--max-output-tokens <n>', 'max tokens per model reply')
    .option('--temperature <t>', 'sampling temperature')
    .addOption(
      new Option(
        '--review <mode>',
        'an independent model review of the verified patch before it succeeds: on (a review that cannot be had is noted), required (then a person decides); default off',
      ).choices(['off', 'on', 'required']),
    )
    .option('--review-model <m>', "the reviewer's model (default: the run's), or scripted:FILE")
    .option(
      '--attempts <n>',
      'parallel attempts: N child runs of the goal at once, each in its own worktree; the first to succeed wins, the others are cancelled',
    )
    .option('--attempt-model <m>', "the parallel attempts' models, in turn (repeatable; default: --model for all)", collect)
    .option('--heartbeat-timeout <d>', 'how soon a dead worker is noticed')
    .option('--command-timeout <d>', 'longest a single command may run');
}
