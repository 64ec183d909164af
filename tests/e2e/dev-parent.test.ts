/**
 * `kiln dev`'s Temporal server goes with it, however it ends: SIGKILLed, it once left the server
 * running for good (six strays on this machine after one test pass, each holding its port and DB).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { freePort } from '../../src/temporal/dev-server.js';
import { spawnKiln, userEnv } from './cli.js';

/** The pids of Temporal servers started on this DB file (the file name is unique to the test). */
const serversOn = (db: string) =>
  (spawnSync('pgrep', ['-f', `start-dev --db-filename ${db}`], { encoding: 'utf8' }).stdout ?? '')
    .split('\n')
    .filter(Boolean)
    .map(Number)
    .filter((pid) => !(spawnSync('ps', ['-o', 'comm=', '-p', String(pid)], { encoding: 'utf8' }).stdout ?? '').includes('setpriv'));

describe('kiln dev', () => {
  it('a SIGKILLed kiln dev takes its Temporal server with it', async () => {
    const home = mkdtempSync(join(tmpdir(), 'kiln-e2e-devparent-'));
    const db = join(home, 'temporal.db');
    const dev = spawnKiln(['dev', '--port', String(await freePort()), '--ui-port', String(await freePort()), '--db', db], {
      env: userEnv({ KILN_HOME: home }),
    });
    await dev.waitFor('Ctrl-C stops everything', 90_000);
    expect(serversOn(db)).toHaveLength(1);
    await dev.kill();
    const deadline = Date.now() + 20_000;
    while (serversOn(db).length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    expect(serversOn(db)).toEqual([]);
  }, 150_000);
});
