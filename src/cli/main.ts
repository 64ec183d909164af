/**
 * `kiln`: start runs, follow them, answer approvals, read what they left (program.ts has what
 * every entry shares: the error handler, the help layout).
 */
import { Command, Option } from 'commander';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { approverFor } from '../client/signed-approver.js';
import { CliError, UsageError } from '../shared/errors.js';
import { colourOn, paintSummary } from './colour.js';
import { addRunCommand } from './commands/run.js';
import { collect, newProgram, runProgram } from './program.js';
import type { FleetFilters } from '../client/fleet-query.js';
import type { Client } from '@temporalio/client';

// Each command loads what it needs when it runs: the Temporal client alone (gRPC, protobuf
// descriptors) is most of a start-up, and `kiln --help` or a flag error needs none of it.
const runsModule = () => import('../client/runs.js');
const connectClient = async () => (await import('../temporal/connection.js')).connectClient();
type RunHandle = ReturnType<Awaited<ReturnType<typeof runsModule>>['handleFor']>;
interface WorkerFlags {
  allowSandboxOff?: boolean;
  buildId?: string;
  deployment?: string;
  takeNewRuns?: boolean;
  versioning: boolean;
  metrics?: string;
  runCeilings?: string;
}

/** How long `kiln worker` waits for its tasks in hand on SIGTERM/SIGINT before it exits anyway. */
const SHUTDOWN_GRACE_MS = Number(process.env.KILN_SHUTDOWN_GRACE_MS) || 15_000;

export function buildProgram(out: (s: string) => void = (s) => process.stdout.write(s + '\n')): Command {
  const program = newProgram();

  program
    .command('setup')
    .summary('Build/cache the Temporal CLI, check bubblewrap')
    .description('Provision what Kiln needs on this machine: the Temporal CLI (built once, cached) and bubblewrap')
    .option('--cluster', 'also build the Temporal server and its schema tool for `kiln cluster` (needs PostgreSQL)')
    .action(async (o: { cluster?: boolean }) => {
      const { runSetup } = await import('./commands/setup.js');
      await runSetup(out);
      if (o.cluster) {
        const { provisionServerBinaries } = await import('../temporal/server-binary.js');
        const { findPgBin } = await import('../temporal/postgres.js');
        await provisionServerBinaries({ log: out });
        out(`postgresql: ${findPgBin()}`);
      }
    });

  program
    .command('dev')
    .summary('Start a local Temporal server, Web UI and worker')
    .description('Start the embedded Temporal dev server (SQLite under KILN_HOME, Web UI) and a worker')
    .option('--no-worker', 'start only the server')
    .option('--port <n>', 'Temporal frontend port', '7233')
    .option('--ui-port <n>', 'Web UI port', '8233')
    .option('--db <file>', 'SQLite file (default: $KILN_HOME/temporal.db)')
    .option('--allow-sandbox-off', "as this worker's operator, let runs ask for --sandbox off (unsafe)")
    .option('--codec-endpoint <url>', "the Web UI's remote codec (default with codec keys set: a `kiln codec-server` started here)")
    .action(async (o: { worker: boolean; port: string; uiPort: string; db?: string; allowSandboxOff?: boolean; codecEndpoint?: string }) => {
      if (o.codecEndpoint !== undefined && !/^https?:\/\/[^\s]+$/.test(o.codecEndpoint))
        throw new UsageError(`--codec-endpoint ${o.codecEndpoint}: expected an http(s) URL`);
      const { runDev } = await import('./commands/dev.js');
      await runDev(
        {
          worker: o.worker,
          port: Number(o.port),
          uiPort: Number(o.uiPort),
          db: o.db,
          allowSandboxOff: o.allowSandboxOff === true,
          codecEndpoint: o.codecEndpoint,
        },
        out,
      );
    });

  program
    .command('codec-server')
    .summary("Serve the Web UI's codec (encrypted runs)")
    .description(
      "Serve the Temporal Web UI's remote codec endpoint (POST /encode, /decode) with this machine's codec keys; only the UI's origin and holders of the token may use it",
    )
    .option('--port <n>', 'port on 127.0.0.1', '8234')
    .option('--origin <url>', 'the Web UI origin allowed by CORS', 'http://127.0.0.1:8233')
    .action(async (o: { port: string; origin: string }) => {
      const port = Number(o.port);
      if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError(`--port ${o.port}: expected a port number`);
      const { runCodecServer } = await import('./commands/codec-server.js');
      await runCodecServer({ port, origin: o.origin }, out);
    });

  program
    .command('serve')
    .summary('Serve the HTTP API and the approval inbox')
    .description(
      'Serve the HTTP API (bearer tokens, tenants, OpenAPI at /openapi.json) and the approval inbox at /, over the Temporal server at TEMPORAL_ADDRESS (docs/server.md)',
    )
    .option('--port <n>', 'port to listen on', '8080')
    .option('--host <addr>', 'address to bind (loopback by default: put a TLS proxy in front to serve beyond this host)', '127.0.0.1')
    .option('--tenants <file>', 'tenant settings (default: $KILN_HOME/server/tenants.json)')
    .option('--allow-scripted-model', 'accept scripted:FILE models, which read a file on this host: for development only (also KILN_SERVE_ALLOW_SCRIPTED=1)')
    .action(async (o: { port: string; host: string; tenants?: string; allowScriptedModel?: boolean }) => {
      const { runServe } = await import('./commands/serve.js');
      await runServe(o, out);
    });

  const token = program
    .command('token')
    .summary('Create, list and revoke API tokens for `kiln serve`')
    .description('Bearer tokens for `kiln serve`, stored hashed under $KILN_HOME/server/tokens.json');
  token
    .command('create')
    .description('Create a token and print it once')
    .requiredOption('--tenant <name>', 'the tenant whose runs the token reaches')
    .requiredOption('--user <name>', 'the person every write with it is attributed to')
    .addOption(
      new Option('--role <role>', 'viewer reads; runner also starts and cancels; approver also approves')
        .choices(['viewer', 'runner', 'approver'])
        .default('viewer'),
    )
    .action(async (o: { tenant: string; user: string; role: string }) => {
      const { runTokenCreate } = await import('./commands/serve.js');
      runTokenCreate(o, out);
    });
  token
    .command('list')
    .description('List tokens (never their secrets)')
    .option('--json', 'as JSON')
    .action(async (o: { json?: boolean }) => {
      const { runTokenList } = await import('./commands/serve.js');
      runTokenList(o, out);
    });
  token
    .command('revoke')
    .description('Revoke a token by its id (see `kiln token list`)')
    .argument('<id>', 'the token id, tok-…')
    .action(async (id: string) => {
      const { runTokenRevoke } = await import('./commands/serve.js');
      runTokenRevoke(id, out);
    });

  program
    .command('cluster')
    .summary('Start a PostgreSQL-backed Temporal cluster here')
    .description(
      'Start the production Temporal server on a private PostgreSQL (built and set up on first use; data kept in --dir) for workers on this host or, with --bind, on several',
    )
    .option('--dir <dir>', 'where PostgreSQL data, config and logs live (default: $KILN_HOME/cluster; /var/lib/kiln/cluster as root)')
    .option('--port <n>', 'Temporal frontend port', '7233')
    .option('--shards <n>', 'history shards (fixed at the first start)', '4')
    .option(
      '--bind <ip>',
      'the address the server listens on: 127.0.0.1 is this machine only; other hosts need an address of this machine or 0.0.0.0 (no authentication: docs/team-setup.md)',
      '127.0.0.1',
    )
    .action(async (o: { dir?: string; port: string; shards: string; bind: string }) => {
      const port = Number(o.port);
      const shards = Number(o.shards);
      if (!Number.isInteger(port) || port <= 0 || port > 65535) throw new UsageError(`--port ${o.port}: expected a port number`);
      if (!Number.isInteger(shards) || shards <= 0) throw new UsageError(`--shards ${o.shards}: expected a positive whole number`);
      const { runCluster } = await import('./commands/cluster.js');
      const { checkBindAddress } = await import('../temporal/cluster.js');
      await runCluster({ dir: o.dir, port, shards, bind: checkBindAddress(o.bind) }, out);
    });

  program
    .command('worker')
    .summary('Run a worker against TEMPORAL_ADDRESS')
    .description("Run a worker against TEMPORAL_ADDRESS (workflows plus this host's activities)")
    .option('--allow-sandbox-off', 'let runs ask for --sandbox off (unsafe; also KILN_ALLOW_SANDBOX_OFF=1)')
    .option('--build-id <id>', "this worker's build (also KILN_BUILD_ID; default: Kiln's version and a hash of the workflow code)")
    .option('--deployment <name>', 'the Worker Deployment it belongs to (also KILN_DEPLOYMENT; default: the task queue, kiln)')
    .option('--take-new-runs', 'make this build current at start even if another one is (default: only when none is)')
    .option('--no-versioning', 'run unversioned: runs are not pinned to a build (also KILN_VERSIONING=off)')
    .option('--metrics <host:port>', 'serve Prometheus metrics at http://HOST:PORT/metrics (also KILN_METRICS_ADDR)')
    .option('--run-ceilings <field=value,...>', 'the most a run may ask for, e.g. budgets.maxUsd=50 (also KILN_RUN_CEILINGS; docs/threat-model.md)')
    .action(async (o: WorkerFlags) => {
      // bad flags are said before anything starts (a Temporal Runtime would keep the process alive after the error)
      const { checkBuildId, deploymentNameFor } = await import('../temporal/deployment.js');
      const { temporalSettings } = await import('../temporal/connection.js');
      const { runCeilingsFrom } = await import('../policy/run-ceilings.js');
      if (o.runCeilings !== undefined) runCeilingsFrom(o.runCeilings, '--run-ceilings');
      else runCeilingsFrom(process.env.KILN_RUN_CEILINGS);
      const versioned = o.versioning && process.env.KILN_VERSIONING !== 'off';
      const envBuild = process.env.KILN_BUILD_ID?.trim();
      const buildId = !versioned
        ? undefined
        : o.buildId !== undefined
          ? checkBuildId(o.buildId, '--build-id')
          : envBuild
            ? checkBuildId(envBuild, 'KILN_BUILD_ID')
            : undefined;
      const deploymentName = versioned
        ? deploymentNameFor(temporalSettings().taskQueue, o.deployment === undefined ? process.env : { ...process.env, KILN_DEPLOYMENT: o.deployment })
        : undefined;
      const { installQuietRuntime } = await import('../temporal/quiet-runtime.js');
      const { metricsAddress, metricsStatus } = await import('../temporal/metrics.js');
      const metrics = o.metrics
        ? metricsAddress(o.metrics, '--metrics')
        : process.env.KILN_METRICS_ADDR?.trim()
          ? metricsAddress(process.env.KILN_METRICS_ADDR)
          : undefined;
      // a worker on its own keeps warnings (e.g. "server unreachable, retrying"); not state chatter
      installQuietRuntime('WARN', process.env, metrics);
      // until the worker runs, a stop request ends the process at once: connecting may retry
      // for a long time, and systemd or docker stop must not hang on it
      const early = (sig: NodeJS.Signals) => {
        out(`stopped (${sig}) before the worker started`);
        process.exit(sig === 'SIGTERM' ? 143 : 130);
      };
      process.once('SIGINT', early);
      process.once('SIGTERM', early);
      const { startWorker, sandboxStatus, operatorStatus, modelStatus } = await import('../worker.js');
      const { defaultDeps } = await import('../activities/index.js');
      await connectClient().then(({ connection }) => connection.close());
      const deps = defaultDeps({
        ...process.env,
        ...(o.allowSandboxOff ? { KILN_ALLOW_SANDBOX_OFF: '1' } : {}),
        ...(o.runCeilings !== undefined ? { KILN_RUN_CEILINGS: o.runCeilings } : {}),
      });
      const w = await startWorker({
        deps,
        versioning: {
          buildId,
          deploymentName,
          off: versioned ? undefined : true,
          takeNewRuns: o.takeNewRuns ? 'always' : 'if-none',
        },
        fleetGauges: metrics ? { log: out } : undefined,
      });
      process.removeListener('SIGINT', early);
      process.removeListener('SIGTERM', early);
      out(`kiln worker ready (host queue ${w.hostQueue}); Ctrl-C stops it`);
      out(w.searchAttributes);
      out(w.codec);
      out(metricsStatus(metrics));
      out(w.versioning);
      out(await sandboxStatus());
      out(operatorStatus(deps.operator));
      out(modelStatus());
      // the SDK stops polling on SIGINT by itself, but its connection would keep Node running
      let stopping: Promise<void> | undefined;
      const shutdown = () => (stopping ??= w.shutdown());
      const stop = () => {
        out('stopping: finishing the tasks in hand…');
        void shutdown();
        // a graceful stop waits for the server; one that is gone must not hold the process
        // (systemd and `docker stop` would hang): tasks in hand are retried by another worker
        setTimeout(() => {
          out(
            `stopped without finishing: the tasks in hand did not end within ${SHUTDOWN_GRACE_MS / 1000} s (is the Temporal server reachable?); Temporal retries them elsewhere`,
          );
          process.exit(0);
        }, SHUTDOWN_GRACE_MS).unref();
      };
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
      await w.run;
      await shutdown();
    });

  const deploy = program
    .command('deploy')
    .summary('Which worker build takes new runs')
    .description('Worker Versioning: a run finishes on the build that started it; the current build takes new runs (see docs/cluster.md, "Upgrading workers")');
  deploy
    .command('status')
    .description('List the builds of the deployment: which is current, which still have open runs (draining)')
    .option('--deployment <name>', 'the Worker Deployment (default: KILN_DEPLOYMENT, else the task queue)')
    .action(async (o: { deployment?: string }) => {
      const { deployStatus } = await import('./commands/deploy.js');
      await deployStatus(o, out);
    });
  deploy
    .command('set-current')
    .description('Send new runs to this build; runs in flight stay on theirs (its workers must be polling)')
    .requiredOption('--build-id <id>', 'the build, as `kiln worker` printed it')
    .option('--deployment <name>', 'the Worker Deployment (default: KILN_DEPLOYMENT, else the task queue)')
    .action(async (o: { buildId: string; deployment?: string }) => {
      const { deploySetCurrent } = await import('./commands/deploy.js');
      await deploySetCurrent(o, out);
    });

  program
    .command('trust')
    .summary("Let a repo's own config loosen your policy")
    .description(
      "Trust this repo's .kiln/policy.json, .kiln/config and AGENTS.md as they are now: their loosenings (allowed commands, sensitive files, unprotected paths, setup, checks) apply until any of them changes",
    )
    .option('--repo <dir>', 'the repository (default: the current directory)')
    .option('--revoke', 'forget the trust')
    .action(async (o: { repo?: string; revoke?: boolean }) => {
      const { runTrust } = await import('./commands/trust.js');
      await runTrust(o, out);
    });

  addRunCommand(program, out);

  program
    .command('status')
    .summary("Show a run's phase, plan, files, approvals, budget")
    .description("Show a run's phase, attempt, plan, touched files, pending approvals and budget")
    .argument('<run>')
    .option('--json', 'print the state as JSON')
    .action(async (runId: string, o: { json?: boolean }) => {
      const { readState, outcome, formatSummary, webUiUrl } = await runsModule();
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
    .summary('List runs; filter by phase, repo, waiting, path…')
    .description(
      "List runs, newest first. Each filter is a Temporal visibility query over Kiln's search attributes (--show-query prints it for `temporal workflow list --query`)",
    )
    .option('--limit <n>', 'how many', '20')
    .option('--json', 'one JSON object a line')
    .option('--phase <phase>', 'only runs in this phase (e.g. awaiting_approval, needs_human)')
    .option('--repo <dir>', 'only runs on this repository')
    .option('--waiting-longer-than <d>', 'only runs whose approval has waited longer than this (e.g. 30m, 2d)')
    .option('--over-budget <share>', 'only runs that used at least this share of a budget (0.8 or 80%)')
    .option('--touched <path>', 'only runs that changed this file (repo-relative)')
    .option('--approver <name>', 'only runs where this person decided an approval')
    .option('--show-query', 'print the visibility query instead of running it')
    .action(async (o: FleetFilters & { limit: string; json?: boolean; showQuery?: boolean }) => {
      const limit = Number(o.limit);
      if (!Number.isInteger(limit) || limit <= 0) throw new UsageError(`--limit ${o.limit}: expected a positive whole number`);
      const { fleetQuery, hasFilters, repoKey } = await import('../client/fleet-query.js');
      // the filters alone: --limit and --json are not filters (with them, a plain `kiln list` was refused on a server without the attributes)
      const filters: FleetFilters = {
        phase: o.phase,
        repo: o.repo === undefined ? undefined : await repoKey(o.repo),
        waitingLongerThan: o.waitingLongerThan,
        overBudget: o.overBudget,
        touched: o.touched,
        approver: o.approver,
      };
      const query = fleetQuery(filters);
      if (o.showQuery) return out(query);
      const [{ hasKilnSearchAttributes }, { KilnApprovers, KilnBudgetShare, KilnPhase, KilnRepo, KilnTouched, KilnWaitingSince }] = await Promise.all([
        runsModule(),
        import('../shared/search-attributes.js'),
      ]);
      const { client, connection } = await connectClient();
      try {
        if (hasFilters(filters) && !(await hasKilnSearchAttributes(client))) {
          throw new CliError(
            "this server does not have Kiln's search attributes, so runs cannot be filtered: start `kiln worker` once (it registers them) or see docs/cluster.md",
            2,
          );
        }
        let n = 0;
        for await (const w of client.workflow.list({ query })) {
          const a = w.typedSearchAttributes;
          if (o.json) {
            out(
              JSON.stringify({
                runId: w.workflowId,
                status: w.status.name,
                phase: a.get(KilnPhase) ?? null,
                started: w.startTime.toISOString(),
                repo: a.get(KilnRepo) ?? null,
                touched: a.get(KilnTouched) ?? [],
                approvers: a.get(KilnApprovers) ?? [],
                budgetShare: a.get(KilnBudgetShare) ?? null,
                waitingSince: a.get(KilnWaitingSince)?.toISOString() ?? null,
              }),
            );
            if (++n >= limit) break;
            continue;
          }
          if (n === 0) out(`${'RUN'.padEnd(36)} ${'STATUS'.padEnd(11)} ${'PHASE'.padEnd(17)} ${'STARTED'.padEnd(24)} REPO`);
          const phase = a.get(KilnPhase) ?? '-';
          const repo = a.get(KilnRepo) ?? '';
          out(`${w.workflowId.padEnd(36)} ${w.status.name.padEnd(11)} ${phase.padEnd(17)} ${w.startTime.toISOString().padEnd(24)} ${repo}`.trimEnd());
          if (++n >= limit) break;
        }
        if (n === 0 && !o.json) out(hasFilters(filters) ? 'no runs match' : 'no runs yet: start one with `kiln run --repo DIR --goal TEXT`');
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
      const { outcome, Contact, jsonSummary, formatSummary } = await runsModule();
      await withRun(runId, async (handle) => {
        const r = await outcome(handle, undefined, new Contact(runId, (l) => process.stderr.write(`${l}\n`)));
        out(o.json ? jsonSummary(r) : paintSummary(formatSummary(r), colourOn()));
        if (r.state !== 'succeeded') process.exitCode = 1;
      });
    });

  program
    .command('approve')
    .summary('Approve a pending tool call')
    .description('Approve a pending tool call (the only pending one if no id is given)')
    .argument('[run]', 'the run (default: the only run waiting for an approval)')
    .argument('[approval]', "the approval id (default: the run's only pending approval)")
    .option('--by <name>', 'who approves (default: your OS user; audit.jsonl records it as self-declared unless it is that user)')
    .option('--note <text>', 'a note for the audit log')
    .option('--for-run', 'approve this kind of call for the rest of the run')
    .option('--pre <command>', 'approve ahead of time: the first request for exactly this command (never a call the policy denies)')
    .addOption(new Option('--scope <scope>', 'once, or run: with --pre, every request for that command; else like --for-run').choices(['once', 'run']))
    .action(
      async (
        runArg: string | undefined,
        approvalId: string | undefined,
        o: { by?: string; note?: string; forRun?: boolean; pre?: string; scope?: 'once' | 'run' },
      ) => {
        const scope = o.scope ?? (o.forRun ? 'run' : 'once');
        const { sendApproval, sendPreApproval } = await runsModule();
        if (o.pre !== undefined) {
          if (!runArg || approvalId)
            throw new UsageError('--pre approves a command ahead of time: name the run and no approval (kiln approve RUN --pre "npm run lint")');
          return withRun(runArg, async (handle, client) => {
            const by = await approverFor(handle, o.by, { kind: 'pre-approval', command: o.pre!, scope });
            out(await sendPreApproval(client, handle, { text: o.pre!, scope, by }));
          });
        }
        const runId = runArg ?? (await onlyWaitingRun());
        await withRun(runId, async (handle, client) => {
          const id = approvalId ?? (await onlyPending(handle));
          const by = await approverFor(handle, o.by, { kind: 'approval', id });
          out(await sendApproval(client, handle, { approvalId: id, approve: true, scope, by, note: o.note }));
        });
      },
    );

  program
    .command('reject')
    .summary('Reject a pending tool call, with a reason')
    .description('Reject a pending tool call; the reason goes back to the model')
    .argument('<run>')
    .argument('<approval>')
    .requiredOption('--reason <text>', 'why (the model reads it)')
    .option('--by <name>', 'who rejects (default: your OS user)')
    .action(async (runId: string, approvalId: string, o: { reason: string; by?: string }) => {
      const { sendApproval } = await runsModule();
      await withRun(runId, async (handle, client) => {
        const by = await approverFor(handle, o.by, { kind: 'approval', id: approvalId });
        out(await sendApproval(client, handle, { approvalId, approve: false, reason: o.reason, by }));
      });
    });

  for (const [name, action, summary, desc] of [
    ['hint', 'hint', 'Give a waiting run a hint; it tries once more', 'Give a run that needs a person a hint and let it try once more'],
    ['accept', 'accept', "Accept a waiting run's patch as it is", 'Keep the patch of a run that needs a person as it is (succeeded, accepted by you)'],
    ['abandon', 'abandon', 'End a waiting run as blocked', 'End a run that needs a person as blocked'],
  ] as const) {
    const c = program.command(name).summary(summary).description(desc).argument('<run>');
    if (action === 'hint') c.argument('<text>');
    c.option('--by <name>', 'who decides (default: your OS user)').action(async (runId: string, ...rest: unknown[]) => {
      const text = action === 'hint' ? (rest[0] as string) : undefined;
      const o = rest[action === 'hint' ? 1 : 0] as { by?: string };
      const { sendHuman } = await runsModule();
      await withRun(runId, async (handle, client) => {
        const by = await approverFor(handle, o.by, { kind: 'human', action, text });
        out(await sendHuman(client, handle, { action, text, by }));
      });
    });
  }

  program
    .command('cancel')
    .summary('Cancel a run (worktree removed, artifacts kept)')
    .description('Cancel a run: it stops, its worktree is removed, its artifacts are still written')
    .argument('<run>')
    .option('--by <name>', "who cancels (default: your OS user; recorded in audit.jsonl and the run's reason)")
    .option('--reason <text>', 'why (recorded with it)')
    .action(async (runId: string, o: { by?: string; reason?: string }) => {
      const { requestCancel } = await runsModule();
      await withRun(runId, async (handle, client) => {
        const d = await handle.describe();
        const ended = (status: string) => new CliError(`${runId} already ended (${status}): nothing to cancel`);
        if (d.status.name !== 'RUNNING') throw ended(d.status.name.toLowerCase());
        const by = await approverFor(handle, o.by, { kind: 'cancel' });
        if (!(await requestCancel(handle, { by, reason: o.reason, via: client.options.identity }))) throw ended('meanwhile');
        out(`cancelling ${runId}: it stops, writes its artifacts and removes its worktree (\`kiln wait ${runId}\` shows when it is done)`);
      });
    });

  program
    .command('clean')
    .summary('Remove the worktrees of finished runs')
    .description('Remove the worktrees that finished runs kept (blocked runs keep theirs for inspection); artifacts stay')
    .requiredOption('--repo <dir>', 'the repository whose .kiln/worktrees to clean')
    .option('--older-than <d>', 'only worktrees untouched for this long (e.g. 7d)')
    .option('--unknown', 'also remove worktrees of runs the server does not know')
    .option('--dry-run', 'say what would be removed')
    .action(async (o: { repo: string; olderThan?: string; unknown?: boolean; dryRun?: boolean }) => {
      const { duration } = await import('../client/run-options.js');
      const olderThanMs = o.olderThan === undefined ? undefined : duration(o.olderThan, '--older-than', 0);
      const { cleanWorktrees } = await import('./commands/clean.js');
      const { client, connection } = await connectClient();
      try {
        const r = await cleanWorktrees(client, { repo: o.repo, olderThanMs, unknown: o.unknown, dryRun: o.dryRun });
        for (const id of r.removed) out(`${o.dryRun ? 'would remove' : 'removed'} ${id}`);
        for (const k of r.kept) out(`kept ${k.runId}: ${k.why}`);
        if (!r.removed.length && !r.kept.length) out('no worktrees to clean');
      } finally {
        await connection.close();
      }
    });

  program
    .command('logs')
    .summary("Print a run's event log")
    .description("Print a run's event log (events.jsonl), or the live log if the worker is elsewhere")
    .argument('<run>')
    .option('--repo <dir>', 'the repo, to read the artifacts directly')
    .option('--json', 'print events.jsonl as it is (every event, one JSON object a line)')
    .action(async (runId: string, o: { repo?: string; json?: boolean }) => {
      // the artifacts are on disk: no server needed
      const { artifactsDir } = await import('../shared/paths.js');
      const local = o.repo ? await readFile(join(artifactsDir(o.repo, runId), 'events.jsonl'), 'utf8').catch(() => undefined) : undefined;
      const { formatEvents, formatLine, readState, startInput } = await runsModule();
      if (local) return o.json ? out(local.trimEnd()) : formatEvents(local).forEach((l) => out(l));
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
    .command('audit')
    .summary("Check a run's audit log")
    .description(
      "audit verify RUN: recompute the hash chain of the run's audit.jsonl and check it ends at the head the run recorded (asked from Temporal); exits 1 naming what does not hold, 3 when the chain holds but no recorded head says where it ends (unverified)",
    )
    .command('verify')
    .argument('<run>')
    .option('--repo <dir>', 'the repo that holds the run (default: asked from Temporal)')
    .option(
      '--offline',
      'check the chain only, without Temporal: a cut or an edit of the last line is not seen, so it exits 3 (unverified) when the chain holds (needs --repo)',
    )
    .action(async (runId: string, o: { repo?: string; offline?: boolean }) => {
      const { auditFileExecution, auditVerify } = await import('./commands/audit.js');
      if (o.offline) {
        if (!o.repo) throw new UsageError('--offline reads the file only: pass --repo DIR');
        return out(await auditVerify(o.repo, runId));
      }
      const { readState, startInput } = await runsModule();
      const { recordedAuditHead } = await import('../client/audit-head.js');
      await withRun(runId, async (handle, client) => {
        const repo = o.repo ?? (await readState(handle))?.repo ?? (await startInput(handle))?.repo;
        if (!repo) throw new UsageError(`cannot find the repo of ${runId}: pass --repo DIR`);
        out(await auditVerify(repo, runId, await recordedAuditHead(handle, client, await auditFileExecution(repo, runId))));
      }).catch(async (err: unknown) => {
        const { TemporalUnreachableError } = await import('../temporal/connection.js');
        if (err instanceof TemporalUnreachableError && o.repo)
          throw new TemporalUnreachableError(`${err.message}; or pass --offline to check the chain only (the head the run recorded is in Temporal)`);
        throw err;
      });
    });

  program
    .command('diff')
    .summary("Print a run's patch")
    .description("Print a run's patch against its base")
    .argument('<run>')
    .option('--repo <dir>', 'the repo, to read the artifacts directly')
    .action(async (runId: string, o: { repo?: string }) => {
      const { currentPatch, finishedPatch } = await import('../client/patch.js');
      const left = o.repo ? await finishedPatch(o.repo, runId) : undefined;
      if (left !== undefined) return out(left);
      const { readState, startInput } = await runsModule();
      await withRun(runId, async (handle) => {
        const st = await readState(handle);
        const repo = o.repo ?? st?.repo ?? (await startInput(handle))?.repo;
        if (!repo) throw new UsageError(`cannot find the repo of ${runId}: pass --repo DIR`);
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
    .option('--model <m>', "model id for every task (needs ANTHROPIC_API_KEY); default: each task's script")
    .option('--out <dir>', 'where the report goes (default: a new folder under $KILN_HOME/evals)')
    .option('--task <name>', 'only this task (repeatable)', collect)
    .option('--json', 'make the last line one JSON object with totals and runs')
    .action(async (o: { suite?: string; repeat: string; model?: string; out?: string; task?: string[]; json?: boolean }) => {
      const { runEval } = await import('./commands/eval.js');
      const ok = await runEval(o, out);
      if (!ok) process.exitCode = 1;
    });

  const policy = program
    .command('policy')
    .summary('Check a tool call, redact text, test policy cases')
    .description('Dry-run the policy: check a call, redact text, test a case file');
  policy
    .command('check')
    .description('Print the decision, rule and reason for one tool call as a run would see it')
    .requiredOption('--workspace <dir>', 'the workspace the call runs in')
    .requiredOption('--tool <name>', 'tool name')
    .requiredOption('--input <json>', 'tool input as JSON')
    .option('--mode <mode>', 'approval mode: strict, default or auto', 'default')
    .option('--json', 'print one JSON object')
    .option('--explain', 'for run_command: print the parsed shell structure the policy judged')
    .action(async (o: { workspace: string; tool: string; input: string; mode: string; json?: boolean; explain?: boolean }) => {
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

  const sandbox = program
    .command('sandbox')
    .summary('Run a command in the sandbox as run_command would')
    .description('Run commands exactly as run_command would');
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

async function withRun(runId: string, fn: (handle: RunHandle, client: Client) => Promise<void>): Promise<void> {
  const { handleFor, ensureExists } = await runsModule();
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
  const { waitingRuns } = await runsModule();
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

async function onlyPending(handle: RunHandle): Promise<string> {
  const { readState } = await runsModule();
  const st = await readState(handle);
  if (!st) throw new UsageError('no worker answers right now, so the pending approval is unknown: name it (kiln approve RUN APPROVAL)');
  const ids = st.pendingApprovals.map((a) => a.id);
  if (ids.length === 1) return ids[0]!;
  if (ids.length === 0) throw new UsageError(`${st.runId} has no pending approval (phase: ${st.phase})`);
  throw new UsageError(`${st.runId} has ${ids.length} pending approvals (${ids.join(', ')}): name one`);
}

export async function main(argv: string[] = process.argv): Promise<void> {
  await runProgram(buildProgram(), argv);
}
