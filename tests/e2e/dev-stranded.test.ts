/**
 * A rebuilt `kiln dev` and the runs its previous build started: pinned to that build (Worker
 * Versioning), they wait for a worker of it. `kiln status` says so, `kiln dev` lists them and,
 * as asked, finishes them on the kept copy of their build or cancels them with their artifacts.
 * Build A is this checkout's compiled Kiln with one incompatible workflow change (a timer before
 * the first activity), so this build (B) could not replay A's runs.
 */
import { Client, Connection } from '@temporalio/client';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, renameSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/temporal/dev-server.js';
import { PATCH_FILE } from '../../src/shared/paths.js';
import type { RunResult, RunState } from '../../src/shared/types.js';
import { ROOT, exampleRepo } from '../helpers/repo.js';
import { incompatibleBuild } from '../helpers/incompatible-build.js';
import { GOAL, SCRIPT, exitOf, kiln, spawnKiln, until, userEnv, type Live } from './cli.js';

const procs: Live[] = [];
afterAll(async () => {
  for (const p of procs) await p.kill();
});

/** What the server knows of a run that did not end: its pending tasks and its last events. */
async function whereItStands(address: string, id: string): Promise<string> {
  const connection = await Connection.connect({ address });
  try {
    const h = new Client({ connection }).workflow.getHandle(id);
    const d = await h.describe();
    const events = (await h.fetchHistory()).events ?? [];
    const last = events.slice(-12).map((e) => `${e.eventId} ${Object.keys(e).find((k) => k.endsWith('Attributes')) ?? '?'}`);
    // where the last workflow task was sent (a worker's sticky queue or the run's own) and when
    const scheduled = events.filter((e) => e.workflowTaskScheduledEventAttributes).at(-1);
    const lastTask = scheduled && { time: scheduled.eventTime, ...scheduled.workflowTaskScheduledEventAttributes };
    return JSON.stringify({
      status: d.status.name,
      pendingWorkflowTask: d.raw.pendingWorkflowTask,
      pendingActivities: d.raw.pendingActivities?.map((a) => ({
        type: a.activityType?.name,
        state: a.state,
        attempt: a.attempt,
        lastFailure: a.lastFailure?.message,
      })),
      versioning: d.raw.workflowExecutionInfo?.versioningInfo,
      last,
      lastTask,
      now: new Date().toISOString(),
    });
  } finally {
    await connection.close();
  }
}

/** processes whose command line names this KILN_HOME's kept builds (pgrep itself excluded) */
const keptWorkers = (home: string) => (spawnSync('pgrep', ['-f', join(home, 'builds')], { encoding: 'utf8' }).stdout ?? '').trim();

describe('kiln dev after a rebuild', () => {
  it('lists the runs of the earlier build; status says which build they wait for; finish runs them on it, cancel ends them with artifacts', async () => {
    const port = await freePort();
    const uiPort = await freePort([port]);
    const home = mkdtempSync(join(tmpdir(), 'kiln-e2e-stranded-'));
    const db = join(home, 'temporal.db');
    const env = { ...userEnv({ KILN_HOME: home }), TEMPORAL_ADDRESS: `127.0.0.1:${port}` };
    const dev = async (bin: string, ...extra: string[]) => {
      const d = spawnKiln(['dev', '--port', String(port), '--ui-port', String(uiPort), '--db', db, ...extra], { env, bin });
      procs.push(d);
      await d.waitFor('Ctrl-C stops everything', 180_000);
      return d;
    };
    // the whole run on a loaded machine: the kept build's worker starts, bundles and replays first
    const result = async (id: string, d: Live) => {
      const w = await kiln(['wait', id, '--json'], { env, timeoutMs: 300_000 });
      const log = join(home, 'builds', buildIdA!, 'worker.log');
      if (!w.stdout) {
        const said = `kiln wait ${id}: exit ${w.code}\n${w.stderr}\nkiln dev:\n${d.stdout()}\n${d.stderr()}\nworker of A:\n${existsSync(log) ? readFileSync(log, 'utf8') : '(no log)'}\nthe run:\n${await whereItStands(env.TEMPORAL_ADDRESS!, id)}`;
        expect.fail(said);
      }
      return JSON.parse(w.stdout) as RunResult;
    };
    const stop = async (d: Live) => {
      d.child.kill('SIGINT');
      expect((await exitOf(d, 60_000)).code, d.stderr()).toBe(0);
    };

    const a = await dev(join(incompatibleBuild('kiln-build-a-'), 'bin', 'kiln.js'));
    const buildIdA = /versioning: build (\S+) of deployment/.exec(a.stdout())?.[1];
    expect(buildIdA, a.stdout()).toBeDefined();
    expect(existsSync(join(home, 'builds', buildIdA!, 'dist', 'src', 'worker.js'))).toBe(true);
    const ids = [`stranded-1-${process.pid}`, `stranded-2-${process.pid}`];
    for (const id of ids) {
      const repo = exampleRepo('kiln-e2e-stranded-', home);
      const r = await kiln(['run', '--repo', repo, '--goal', GOAL, '--model', SCRIPT, '--id', id, '--detach'], { env });
      expect(r.code, r.stderr).toBe(0);
      await until(`${id} waits for approval`, async () => {
        const s = await kiln(['status', id, '--json'], { env });
        return (JSON.parse(s.stdout || '{}') as Partial<RunState>).pendingApprovals?.length ? true : undefined;
      });
    }
    await stop(a);

    // a build that is not kept cannot run: its runs are listed with the command that moves them, and not cancelled
    const kept = join(home, 'builds', buildIdA!);
    renameSync(kept, join(home, 'hidden-build'));
    let b = await dev(join(ROOT, 'bin', 'kiln.js'), '--stranded', 'cancel');
    expect(b.stdout()).toContain(`${ids[0]}  build ${buildIdA} (not kept here: it cannot run again)`);
    expect(b.stdout()).toContain(`2 of them stay waiting whatever you choose`);
    expect(b.stdout()).toContain(`temporal workflow update-options --query "TemporalWorkerDeploymentVersion IN ('kiln:${buildIdA}')`);
    expect(b.stdout()).not.toContain('cancelling');
    await stop(b);
    expect(existsSync(kept), 'a build its runs still wait for is not pruned').toBe(false);
    renameSync(join(home, 'hidden-build'), kept);

    // the rebuilt kiln dev, not on a terminal and with no --stranded: it lists them and does not wait for an answer
    b = await dev(join(ROOT, 'bin', 'kiln.js'));
    expect(b.stdout()).not.toContain(`build ${buildIdA} of deployment`);
    expect(b.stdout()).toContain('2 open run(s) wait for a worker of an earlier build of Kiln');
    for (const id of ids) expect(b.stdout()).toMatch(new RegExp(`${id}\\s+build ${buildIdA}\\n`));
    expect(b.stdout()).toContain('left waiting (`kiln dev --stranded finish`');
    const status = await kiln(['status', ids[0]!], { env });
    expect(status.stdout).toContain(`${ids[0]}: RUNNING — waiting for a worker of build ${buildIdA}`);
    // an approval cannot be answered by this build's worker: it goes as a Signal at once, and says why
    const approved = await kiln(['approve', ids[0]!, 'ap-1'], { env });
    expect(approved.stdout).toContain(`recorded as a Signal (no worker of build ${buildIdA}, which the run is pinned to, is running)`);
    await stop(b);

    // finish: a worker of the kept build A takes its runs; the approved one ends succeeded
    b = await dev(join(ROOT, 'bin', 'kiln.js'), '--stranded', 'finish');
    expect(b.stdout()).toContain(`build ${buildIdA}: its worker runs until its runs end`);
    expect((await result(ids[0]!, b)).state).toBe('succeeded');
    // the kept worker's first answer about a run needs that run replayed: on a loaded machine the first query can time out
    await until(`${ids[1]} is answered by the kept build's worker`, async () =>
      (await kiln(['status', ids[1]!], { env })).stdout.includes('kiln approve') ? true : undefined,
    );
    await stop(b);
    expect(keptWorkers(home), 'kiln dev stops the kept build’s worker with itself').toBe('');

    // cancel: the run still open is cancelled by its own build, which writes its artifacts
    b = await dev(join(ROOT, 'bin', 'kiln.js'), '--stranded', 'cancel');
    expect(b.stdout()).toContain('1 open run(s) wait for a worker of an earlier build of Kiln');
    expect(b.stdout()).toContain(`${ids[1]}: cancelling`);
    const r = await result(ids[1]!, b);
    expect(r.state).toBe('cancelled');
    expect(existsSync(join(r.artifactsDir, PATCH_FILE))).toBe(true);
    await b.waitFor(`build ${buildIdA}: its runs have ended; its worker stopped`, 60_000);
    expect(keptWorkers(home)).toBe('');
    await stop(b);
  }, 900_000);
});
