/**
 * `kiln run` with codec keys, as a user runs it (bin/kiln.js, which loads the run bundle): the
 * run's input reaches the server encrypted, and a run cancelled from another terminal ends the
 * followed `kiln run` with its outcome — the failure it gets back is decoded by Kiln's failure
 * converter, which the bundle must still find.
 */
import { Client, Connection } from '@temporalio/client';
import proto from '@temporalio/proto';
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/temporal/dev-server.js';
import { exampleRepo } from '../helpers/repo.js';
import { GOAL, SCRIPT, exitOf, kiln, spawnKiln, until, userEnv, type Live } from './cli.js';

const { EventType } = proto.temporal.api.enums.v1;

let dev: Live;
let env: NodeJS.ProcessEnv;
let connection: Connection;
let client: Client;

beforeAll(async () => {
  const port = await freePort();
  const home = mkdtempSync(join(tmpdir(), 'kiln-e2e-enc-'));
  env = userEnv({ KILN_HOME: home, KILN_CODEC_KEY: randomBytes(32).toString('base64'), KILN_CODEC_KEY_ID: 'k1' });
  dev = spawnKiln(['dev', '--port', String(port), '--ui-port', String(await freePort()), '--db', join(home, 'temporal.db')], { env });
  await dev.waitFor('Ctrl-C stops everything', 90_000);
  env = { ...env, TEMPORAL_ADDRESS: `127.0.0.1:${port}` };
  // no keys here: what the server stores, as anyone reading the history sees it
  connection = await Connection.connect({ address: env.TEMPORAL_ADDRESS });
  client = new Client({ connection });
});

afterAll(async () => {
  await connection?.close();
  await dev?.kill();
});

describe('kiln run with codec keys', () => {
  it('starts an encrypted run, follows it, and ends with its outcome when it is cancelled elsewhere', async () => {
    const repo = exampleRepo('kiln-e2e-enc-', env.KILN_HOME!);
    const id = `enc-${process.pid}`;
    const run = spawnKiln(['run', '--repo', repo, '--goal', GOAL, '--model', SCRIPT, '--id', id, '--heartbeat-timeout', '3s'], { env });
    try {
      await run.waitFor(`started ${id}`, 90_000);
      const handle = client.workflow.getHandle(id);
      // the worker (with the keys) took the run up; the goal is nowhere in the stored input
      const events = await until(`the worker schedules ${id}'s first activity`, async () => {
        const { events: e = [] } = await handle.fetchHistory();
        return e.some((x) => x.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED) ? e : undefined;
      });
      const input = events[0]!.workflowExecutionStartedEventAttributes!.input!.payloads![0]!;
      expect(Buffer.from(input.metadata!.encoding!).toString()).toBe('binary/encrypted');
      expect(Buffer.from(input.data!).toString('latin1')).not.toContain('getSession');

      const c = await kiln(['cancel', id], { env });
      expect(c.code, c.stderr).toBe(0);
      const { code } = await exitOf(run, 60_000);
      expect(code, run.stderr()).toBe(1);
      expect(run.stdout()).toMatch(/cancelled/);
      expect(run.stderr()).not.toMatch(/failure converter|Cannot find module|at .*\.js:\d+/);
    } finally {
      await run.kill();
    }
  });
});
