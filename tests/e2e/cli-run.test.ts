/**
 * `kiln dev` (server + worker, one process) on free ports, and everything a user does against
 * it from other terminals: run and follow, approve (also with the official `temporal` CLI),
 * inspect, start the same id ten times at once, cancel, bad input; and Ctrl-C at the end.
 */
import { Client, Connection, WorkflowNotFoundError } from '@temporalio/client';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/temporal/dev-server.js';
import { statusQuery } from '../../src/shared/messages.js';
import type { RunState } from '../../src/shared/types.js';
import { findTemporalCli } from '../../src/temporal/binary.js';
import { exampleRepo } from '../helpers/repo.js';
import { GOAL, SCRIPT, WORKER_NOISE, command, exitOf, kiln, lastLine, portOpen, spawnKiln, until, userEnv, type Live } from './cli.js';

let dev: Live;
let env: NodeJS.ProcessEnv;
let port: number;
let uiPort: number;
let address: string;
let client: Client;
let connection: Connection;
const live: Live[] = [];

beforeAll(async () => {
  port = await freePort();
  uiPort = await freePort();
  const home = mkdtempSync(join(tmpdir(), 'kiln-e2e-dev-'));
  env = userEnv({ KILN_HOME: home });
  dev = spawnKiln(['dev', '--port', String(port), '--ui-port', String(uiPort), '--db', join(home, 'temporal.db')], { env });
  await dev.waitFor('Ctrl-C stops everything', 90_000);
  address = `127.0.0.1:${port}`;
  env = { ...env, TEMPORAL_ADDRESS: address };
  connection = await Connection.connect({ address });
  client = new Client({ connection });
});

afterAll(async () => {
  for (const l of live) await l.kill();
  await connection?.close();
  await dev?.kill();
});

const runArgs = (repo: string, id: string, ...more: string[]) => [
  'run',
  '--repo',
  repo,
  '--goal',
  GOAL,
  '--model',
  SCRIPT,
  '--id',
  id,
  '--heartbeat-timeout',
  '3s',
  ...more,
];

async function state(id: string): Promise<RunState | undefined> {
  try {
    return await client.workflow.getHandle(id).query(statusQuery);
  } catch {
    return undefined;
  }
}

const awaitingApproval = (id: string) => until(`${id} waits for an approval`, async () => ((await state(id))?.pendingApprovals.length ? true : undefined));

let finishedRun: { id: string; repo: string } | undefined;

describe('kiln dev + kiln run', () => {
  it('runs live: phases, tool calls, the approval with its command; approved from another process; --json is JSON lines, progress on stderr', async () => {
    const repo = exampleRepo('kiln-e2e-', env.KILN_HOME!);
    const id = `live-${process.pid}`;
    const uiUrl = `http://127.0.0.1:${uiPort}`;
    const run = spawnKiln([...runArgs(repo, id), '--json'], { env: { ...env, KILN_UI_URL: uiUrl } });
    live.push(run);
    // stdout carries events as JSON lines; the approval shows up as a phase event
    await run.waitFor(/"text":"awaiting_approval/);
    await until('the approval is announced on stderr', async () => run.stderr().includes(`kiln approve ${id} ap-1`));
    const before = run.stderr();
    expect(before).toMatch(/SCRIPTED/);
    expect(before).toContain(`Web UI: ${uiUrl}/namespaces/default/workflows/${id}`);
    expect(before).toMatch(/▸ planning/);
    expect(before).toMatch(/↳ edit src\/session\.js/);
    expect(before).toMatch(/▸ awaiting_approval/);
    expect(before).toMatch(/approval ap-1 needed: run_command: npm run lint/);

    const a = await kiln(['approve', id], { env });
    expect(a.stderr).toBe('');
    expect(a.code).toBe(0);
    expect(a.stdout).toMatch(/approved ap-1/);

    const { code } = await exitOf(run, 60_000);
    expect(code, run.stderr()).toBe(0);
    const out = run.stdout();
    // `kiln run --json | jq` works: every stdout line is one JSON object
    const lines = out
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines[0]).toMatchObject({ type: 'started', runId: id, scripted: true });
    expect(lines.some((l) => l.type === 'event' && l.text === 'verifying')).toBe(true);
    expect(lines.some((l) => l.type === 'event' && l.text === 'succeeded')).toBe(true);
    expect(run.stderr()).toMatch(/✔ .*succeeded/);
    expect(run.stderr()).not.toMatch(WORKER_NOISE);
    const summary = lines.at(-1)!;
    expect(summary).toMatchObject({ type: 'result', runId: id, workflowId: id, state: 'succeeded', attempts: 1, turns: 7, scripted: true });
    expect(summary.patchPath).toBe(join(summary.artifactsDir as string, 'patch.diff'));
    expect(readFileSync(summary.patchPath as string, 'utf8')).toContain('revokedAt');
    // the dev process hosts the worker: its terminal shows no SDK chatter either
    expect(dev.stdout() + dev.stderr()).not.toMatch(WORKER_NOISE);
    finishedRun = { id, repo };
  });

  it('status, list, logs, diff and wait on the finished run print what a user needs', async () => {
    expect(finishedRun, 'needs the run of the previous test').toBeDefined();
    const { id, repo } = finishedRun!;
    const artifacts = join(repo, '.kiln', 'runs', id);

    const st = await kiln(['status', id], { env });
    expect(st.code).toBe(0);
    expect(st.stdout).toMatch(new RegExp(`^${id}: succeeded`));
    expect(st.stdout).toContain(GOAL);
    expect(st.stdout).toMatch(/SCRIPTED/);
    expect(st.stdout).toMatch(/attempt: +1\/3 · turn 7/);
    expect(st.stdout).toMatch(/touched: +src\/session\.js/);
    expect(st.stdout).toMatch(/\[x\] /);
    expect(st.stdout).toContain(`artifacts: ${artifacts}`);
    expect(st.stdout).toMatch(/worktree: .*\(removed\)/);

    const sj = await kiln(['status', id, '--json'], { env });
    expect(sj.code).toBe(0);
    const s = JSON.parse(sj.stdout) as RunState;
    expect(s).toMatchObject({ runId: id, phase: 'succeeded', repo, touchedFiles: ['src/session.js'], pendingApprovals: [] });

    const ls = await kiln(['list'], { env });
    expect(ls.code).toBe(0);
    const row = ls.stdout.split('\n').find((l) => l.startsWith(id));
    expect(row, ls.stdout).toMatch(/COMPLETED +succeeded/);
    expect(row).toContain(repo);

    const logs = await kiln(['logs', id], { env });
    expect(logs.code).toBe(0);
    expect(logs.stdout).toMatch(/^\d\d:\d\d:\d\d ▸ planning$/m);
    expect(logs.stdout).toMatch(/ap-1 approved by /);
    expect(logs.stdout).toMatch(/all 1 check\(s\) passed/);
    expect(logs.stdout).toMatch(/▸ succeeded$/m);
    const raw = await kiln(['logs', id, '--json'], { env });
    expect(raw.stdout).toBe(readFileSync(join(artifacts, 'events.jsonl'), 'utf8').trimEnd() + '\n');

    const diff = await kiln(['diff', id], { env });
    expect(diff.code).toBe(0);
    expect(diff.stdout).toMatch(/^\+\+\+ b\/src\/session\.js$/m);
    expect(diff.stdout).toMatch(/^\+ +\.filter\(\(s\) => !s\.revokedAt\)$/m);

    const w = await kiln(['wait', id], { env });
    expect(w.code).toBe(0);
    expect(w.stdout).toMatch(new RegExp(`✔ ${id}: succeeded`));
    expect(w.stdout).toContain(`patch:     ${join(artifacts, 'patch.diff')}`);
  });

  it('bad input: one line on stderr, exit 2, nothing started', async () => {
    const repo = exampleRepo('kiln-e2e-bad-', env.KILN_HOME!);
    const plain = mkdtempSync(join(tmpdir(), 'kiln-plain-'));
    const closed = await freePort();
    const cases: { name: string; args: string[]; env?: NodeJS.ProcessEnv; message: RegExp }[] = [
      { name: 'repo missing', args: runArgs(join(plain, 'nope'), 'bad-1'), message: /no such directory/ },
      { name: 'not a git repo', args: runArgs(plain, 'bad-2'), message: /not a git repository/ },
      { name: 'empty goal', args: ['run', '--repo', repo, '--goal', '  ', '--model', SCRIPT, '--id', 'bad-3'], message: /--goal/ },
      { name: 'unknown option', args: [...runArgs(repo, 'bad-4'), '--frobnicate'], message: /unknown option '--frobnicate'/ },
      { name: 'unreadable script', args: ['run', '--repo', repo, '--goal', GOAL, '--model', 'scripted:/nope.json', '--id', 'bad-5'], message: /\/nope\.json/ },
      {
        name: 'Temporal unreachable',
        args: runArgs(repo, 'bad-6'),
        env: { ...env, TEMPORAL_ADDRESS: `127.0.0.1:${closed}` },
        message: /cannot reach Temporal at 127\.0\.0\.1:\d+.*kiln dev/,
      },
    ];
    for (const c of cases) {
      const r = await kiln(c.args, { env: c.env ?? env });
      expect(r.code, `${c.name}: ${r.stderr}`).toBe(2);
      const lines = r.stderr.trimEnd().split('\n');
      expect(lines, c.name).toHaveLength(1);
      expect(lines[0], c.name).toMatch(/^kiln: /);
      expect(lines[0], c.name).toMatch(c.message);
      expect(r.stderr, c.name).not.toMatch(/\n\s+at /);
      expect(r.stdout, c.name).toBe('');
    }
    for (const id of ['bad-1', 'bad-2', 'bad-3', 'bad-4', 'bad-5', 'bad-6']) {
      await expect(client.workflow.getHandle(id).describe()).rejects.toBeInstanceOf(WorkflowNotFoundError);
    }
    expect(existsSync(join(repo, '.kiln'))).toBe(false);
    expect(existsSync(join(plain, '.kiln'))).toBe(false);
  });

  it('an untrusted repo: the banner says where each setting came from and what it IGNORED; --sandbox off is refused by this worker, clearly', async () => {
    // trusted in another KILN_HOME: here its configuration is not trusted
    const repo = exampleRepo('kiln-e2e-untrusted-', mkdtempSync(join(tmpdir(), 'kiln-e2e-elsewhere-')));
    mkdirSync(join(repo, '.kiln'), { recursive: true });
    writeFileSync(join(repo, '.kiln', 'config'), JSON.stringify({ setup: ['echo from-repo'], link: ['vendor'] }));
    writeFileSync(join(repo, '.kiln', 'policy.json'), JSON.stringify({ allowSensitive: ['**'] }));
    // --unverified: with its checks ignored, the run would otherwise be refused before the banner
    const r = await kiln([...runArgs(repo, `untrusted-${process.pid}`), '--sandbox', 'off', '--unverified'], { env, timeoutMs: 90_000 });
    const lines = r.stdout.split('\n');
    expect(lines).toContain('checks: (none)  [from none]');
    expect(lines).toContain('setup:  (none)  [from none]');
    expect(lines).toContain('repo configuration: not trusted — it may tighten, not loosen');
    expect(r.stdout).toMatch(/^IGNORED AGENTS\.md checks \[.+\]: ignored, the repo's configuration is not trusted; pass --check or run `kiln trust`$/m);
    expect(r.stdout).toMatch(/^IGNORED \.kiln\/config setup \["echo from-repo"\]: ignored/m);
    expect(r.stdout).toMatch(/^IGNORED \.kiln\/config link \["vendor"\]: ignored/m);
    expect(r.stdout).toMatch(/^IGNORED \.kiln\/policy\.json allowSensitive \["\*\*"\]: ignored/m);
    expect(r.stdout).toContain('sandbox: OFF requested — honoured only by a worker started with --allow-sandbox-off');
    // the worker's refusal reaches the user as one plain reason, and nothing ran
    expect(r.stdout + r.stderr).toMatch(/sandbox "off" is not allowed on this worker; its operator must start it with `kiln worker --allow-sandbox-off`/);
    expect(r.stdout + r.stderr).not.toMatch(/\n\s+at /);
    expect(r.code).not.toBe(0);
  });

  it('control: the same repo once trusted takes its own checks and setup, [from …] says so', async () => {
    const repo = exampleRepo('kiln-e2e-trusted-', env.KILN_HOME!);
    const r = await kiln([...runArgs(repo, `trusted-${process.pid}`), '--detach'], { env, timeoutMs: 90_000 });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/^checks: .+ {2}\[from AGENTS\.md \(trusted\)\]$/m);
    expect(r.stderr).not.toContain('IGNORED');
    await kiln(['cancel', `trusted-${process.pid}`], { env });
  });

  it("no checks (an untrusted repo's AGENTS.md): kiln run says so before it starts anything, naming --check, kiln trust and --unverified; exit 2", async () => {
    // trusted in another KILN_HOME: here its AGENTS.md checks are ignored, and nothing else names one
    const repo = exampleRepo('kiln-e2e-nochecks-', mkdtempSync(join(tmpdir(), 'kiln-e2e-elsewhere-')));
    const id = `nochecks-${process.pid}`;
    const began = Date.now();
    const r = await kiln(runArgs(repo, id), { env, timeoutMs: 60_000 });
    const ms = Date.now() - began;
    expect(r.code, r.stdout + r.stderr).toBe(2);
    const lines = r.stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^kiln: no checks: nothing would verify this run/);
    expect(lines[0]).toContain(`AGENTS.md names checks (npm test) but the repo's configuration is not trusted`);
    for (const way of ['--check CMD', `\`kiln trust --repo ${repo}\``, '--unverified']) expect(lines[0]).toContain(way);
    expect(r.stdout).toBe('');
    // nothing started: no execution, no worktree, no run files, so no model call
    await expect(client.workflow.getHandle(id).describe()).rejects.toBeInstanceOf(WorkflowNotFoundError);
    expect(existsSync(join(repo, '.kiln'))).toBe(false);
    console.log(`kiln run with no checks: refused in ${ms} ms, before any model call`);
  });

  it('control: the same untrusted repo starts with --check; --detach starts it as before, and it waits for a person at the end', async () => {
    const elsewhere = mkdtempSync(join(tmpdir(), 'kiln-e2e-elsewhere-'));
    const checked = `checked-${process.pid}`;
    const run = spawnKiln([...runArgs(exampleRepo('kiln-e2e-check-', elsewhere), checked), '--check', 'npm test'], { env });
    live.push(run);
    await run.waitFor(`started ${checked}`);
    expect(run.stdout()).toContain('checks: npm test  [from --check]');
    expect((await kiln(['cancel', checked], { env })).code).toBe(0);
    await exitOf(run, 60_000);

    const detached = `detached-nochecks-${process.pid}`;
    const d = await kiln([...runArgs(exampleRepo('kiln-e2e-detach-', elsewhere), detached), '--detach'], { env });
    expect(d.code, d.stderr).toBe(0);
    expect(d.stdout.trim()).toBe(`started ${detached}`);
    await awaitingApproval(detached);
    expect((await kiln(['approve', detached], { env })).code).toBe(0);
    const parked = await until(`${detached} waits for a person`, async () => {
      const st = await state(detached);
      return st?.phase === 'needs_human' ? st : undefined;
    });
    expect(parked.reason).toBe('no checks: say how to verify, or accept');
    console.log(`detached with no checks: ${parked.turn} model turns taken before it waits for a person`);
    await client.workflow.getHandle(detached).cancel();
  });

  it('--unverified on a repo with no checks: the run starts, and its end says UNVERIFIED, not a plain succeeded', async () => {
    const repo = exampleRepo('kiln-e2e-unverified-', mkdtempSync(join(tmpdir(), 'kiln-e2e-elsewhere-')));
    const id = `unverified-${process.pid}`;
    const run = spawnKiln([...runArgs(repo, id), '--unverified', '--output-format', 'json'], { env });
    live.push(run);
    await awaitingApproval(id);
    expect((await kiln(['approve', id], { env })).code).toBe(0);
    const { code } = await exitOf(run, 120_000);
    expect(code, run.stderr()).toBe(0);
    expect(run.stderr()).toContain('UNVERIFIED allowed (--unverified)');
    expect(run.stderr()).toMatch(new RegExp(`✔ ${id}: succeeded — UNVERIFIED: no checks ran`));
    const r = JSON.parse(lastLine(run.stdout())) as { state: string; reason: string | null };
    expect(r).toMatchObject({ state: 'succeeded', reason: expect.stringMatching(/^UNVERIFIED: no checks ran/) });
  });

  it('the same --id ten times at once: one execution, one worktree, every call exits 0', async () => {
    const repo = exampleRepo('kiln-e2e-idem-', env.KILN_HOME!);
    const key = `same-${process.pid}`;
    const results = await Promise.all(Array.from({ length: 10 }, () => kiln([...runArgs(repo, key), '--detach'], { env })));
    for (const r of results) {
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout.trim()).toMatch(new RegExp(`^(started|attached to) ${key}$`));
    }
    expect(results.filter((r) => r.stdout.startsWith('started')).length).toBe(1);

    const executions = [];
    for await (const w of client.workflow.list({ query: `WorkflowId = '${key}'` })) executions.push(w.runId);
    expect(executions).toHaveLength(1);
    await awaitingApproval(key);
    expect(readdirSync(join(repo, '.kiln', 'worktrees'))).toEqual([key]);
    await client.workflow.getHandle(key).cancel();
  });

  it("--attempts 2: the children's approvals are announced under their ids; the approved child wins, the other is cancelled", async () => {
    const repo = exampleRepo('kiln-e2e-', env.KILN_HOME!);
    const id = `fan-${process.pid}`;
    const run = spawnKiln(runArgs(repo, id, '--attempts', '2'), { env });
    live.push(run);
    await until('both children ask', async () => run.stdout().includes(`kiln approve ${id}-a1 ap-1`) && run.stdout().includes(`kiln approve ${id}-a2 ap-1`));
    const status = await kiln(['status', id], { env });
    expect(status.stdout).toContain('attempts:  2 at once');
    expect(status.stdout).toContain(`waiting: ap-1 run_command: npm run lint — kiln approve ${id}-a1 ap-1`);
    expect((await kiln(['approve', `${id}-a1`, 'ap-1'], { env })).code).toBe(0);
    const { code } = await exitOf(run, 120_000);
    expect(code, run.stdout() + run.stderr()).toBe(0);
    const after = await kiln(['status', id], { env });
    expect(after.stdout).toContain(`${id}-a1 won`);
    expect(after.stdout).toMatch(new RegExp(`${id}-a2: cancelled`));
  });

  it('kiln approve --pre before the request exists: the run asks, the held word answers, the audit says whose; misuse is exit 2', async () => {
    const repo = exampleRepo('kiln-e2e-pre-', env.KILN_HOME!);
    const id = `pre-${process.pid}`;
    const misuse = await kiln(['approve', id, 'ap-1', '--pre', 'npm run lint'], { env });
    expect(misuse.code).toBe(2);
    expect(misuse.stderr).toMatch(/^kiln: --pre approves a command ahead of time: name the run and no approval/);

    const started = await kiln([...runArgs(repo, id), '--detach'], { env });
    expect(started.code, started.stderr).toBe(0);
    // sent at once: the example asks for `npm run lint` only after its edit, turns later
    const pre = await kiln(['approve', id, '--pre', 'npm run lint'], { env });
    expect(pre.code, pre.stderr).toBe(0);
    expect(pre.stdout).toMatch(/pre-1/);
    const w = await kiln(['wait', id, '--json'], { env, timeoutMs: 120_000 });
    expect(w.code, w.stderr).toBe(0);
    const r = JSON.parse(lastLine(w.stdout)) as { state: string; artifactsDir: string };
    expect(r.state).toBe('succeeded');
    const audit = readFileSync(join(r.artifactsDir, 'audit.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { kind?: string; decision?: string; answered?: string; what?: string });
    expect(audit).toContainEqual(expect.objectContaining({ kind: 'pre-approval', decision: 'held' }));
    expect(audit).toContainEqual(expect.objectContaining({ kind: 'pre-approval', decision: 'used', answered: 'ap-1' }));
  });

  it('kiln cancel mid-run: wait reports cancelled, the worktree is gone, the artifacts are written', async () => {
    const repo = exampleRepo('kiln-e2e-cancel-', env.KILN_HOME!);
    const id = `cancel-${process.pid}`;
    const started = await kiln([...runArgs(repo, id), '--detach'], { env });
    expect(started.code, started.stderr).toBe(0);
    await awaitingApproval(id);
    const worktree = join(repo, '.kiln', 'worktrees', id);
    expect(existsSync(worktree)).toBe(true);

    const c = await kiln(['cancel', id], { env });
    expect(c.code, c.stderr).toBe(0);
    expect(c.stdout).toMatch(/cancel/);
    const w = await kiln(['wait', id, '--json'], { env });
    expect(w.code).toBe(1);
    const r = JSON.parse(lastLine(w.stdout)) as { state: string; artifactsDir: string };
    expect(r.state).toBe('cancelled');
    expect(existsSync(worktree)).toBe(false);
    for (const f of ['events.jsonl', 'metrics.json', 'patch.diff']) expect(existsSync(join(r.artifactsDir, f)), f).toBe(true);
    expect(readFileSync(join(r.artifactsDir, 'patch.diff'), 'utf8')).toContain('revokedAt');
  });

  it('approvals sent with the official temporal CLI: an Update and, in a second run, a Signal', async () => {
    const temporal = findTemporalCli();
    expect(temporal, 'the cached Temporal CLI (npm run setup)').toBeDefined();
    const repo = exampleRepo('kiln-e2e-tcli-', env.KILN_HOME!);
    const viaUpdate = `tcli-update-${process.pid}`;
    const viaSignal = `tcli-signal-${process.pid}`;
    for (const id of [viaUpdate, viaSignal]) expect((await kiln([...runArgs(repo, id), '--detach'], { env })).code).toBe(0);
    await Promise.all([awaitingApproval(viaUpdate), awaitingApproval(viaSignal)]);

    // what docs/temporal-cli.md says about finding and reading runs
    const q = await command(temporal!, ['workflow', 'query', '--address', address, '--workflow-id', viaUpdate, '--name', 'status', '-o', 'json'], { env });
    expect(q.code, q.stderr).toBe(0);
    expect(q.stdout).toMatch(/"phase": "awaiting_approval"/);
    const ls = await command(temporal!, ['workflow', 'list', '--address', address, '--query', "KilnPhase = 'awaiting_approval'"], { env });
    expect(ls.code, ls.stderr).toBe(0);
    expect(ls.stdout).toContain(viaUpdate);
    expect(ls.stdout).toContain(viaSignal);

    const input = (by: string) => JSON.stringify({ approvalId: 'ap-1', approve: true, by });
    const u = await command(
      temporal!,
      ['workflow', 'update', 'execute', '--address', address, '--workflow-id', viaUpdate, '--name', 'approve', '--input', input('temporal-cli')],
      { env },
    );
    expect(u.code, u.stderr).toBe(0);
    expect(u.stdout).toMatch(/approved ap-1/);
    const sg = await command(
      temporal!,
      ['workflow', 'signal', '--address', address, '--workflow-id', viaSignal, '--name', 'approve', '--input', input('temporal-cli-signal')],
      { env },
    );
    expect(sg.code, sg.stderr).toBe(0);

    for (const [id, by] of [
      [viaUpdate, 'temporal-cli'],
      [viaSignal, 'temporal-cli-signal'],
    ] as const) {
      const w = await kiln(['wait', id, '--json'], { env });
      expect(w.code, w.stdout).toBe(0);
      const r = JSON.parse(lastLine(w.stdout)) as { state: string; artifactsDir: string };
      expect(r.state).toBe('succeeded');
      const audit = readFileSync(join(r.artifactsDir, 'audit.jsonl'), 'utf8');
      expect(audit).toContain(`"by":"${by}"`);
    }
  });

  it('Ctrl-C on kiln dev stops the server and the worker cleanly', async () => {
    expect(await portOpen(port)).toBe(true);
    dev.child.kill('SIGINT');
    const { code } = await exitOf(dev);
    expect(code, dev.stderr()).toBe(0);
    expect(dev.stdout()).toMatch(/stopping/);
    expect(await portOpen(port)).toBe(false);
    expect(await portOpen(uiPort)).toBe(false);
    expect(dev.stderr()).not.toMatch(/\n\s+at /);
  });
});
