/**
 * freePort hands out a port nobody listens on; until its user binds it, the OS may hand the same
 * one out again, so two servers of one test could both draw it (the Web UI and its guard). Within a
 * process, a port is handed out once.
 */
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { freePort } from '../../../src/temporal/dev-server.js';

describe('freePort', () => {
  it('never hands out a port twice in one process, nor one it was told is taken', async () => {
    const first = await freePort();
    const ports = [first];
    for (let i = 0; i < 300; i++) ports.push(await freePort([first]));
    expect(new Set(ports).size).toBe(ports.length);
  });

  it('the port it hands out can be bound', async () => {
    const port = await freePort();
    const srv = createServer();
    await new Promise<void>((ok, fail) => {
      srv.once('error', fail);
      srv.listen(port, '127.0.0.1', ok);
    });
    await new Promise((ok) => srv.close(ok));
  });
});
