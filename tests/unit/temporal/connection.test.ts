import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { connectClient, TemporalUnreachableError } from '../../../src/temporal/connection.js';

const settings = (address: string) => ({ address, namespace: 'default', taskQueue: 'kiln-test' });

describe('connectClient', () => {
  it('says "cannot reach" within a few seconds when nothing listens', async () => {
    const t = Date.now();
    const err = await connectClient(settings('127.0.0.1:1')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TemporalUnreachableError);
    expect((err as Error).message).toMatch(/cannot reach Temporal at 127\.0\.0\.1:1 \(tried for \d+ s: .*\).*kiln dev/);
    expect(Date.now() - t).toBeLessThan(8000);
  });

  it('keeps trying a server that accepts but is slow to answer, up to its deadline', async () => {
    // an HTTP/2 server that never answers: the connection is up, the server is "busy"
    const server = http2.createServer();
    let requests = 0;
    server.on('stream', () => void requests++);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as AddressInfo;
    const t = Date.now();
    const err = await connectClient(settings(`127.0.0.1:${port}`), { deadlineMs: 4000, attemptMs: 1000 }).catch((e: unknown) => e);
    server.close();
    expect(err).toBeInstanceOf(TemporalUnreachableError);
    // more than one try, and not given up before the deadline
    expect(Date.now() - t).toBeGreaterThanOrEqual(3000);
  });

  it('says a client that cannot be made (a data converter file missing) at once, not as an unreachable server', async () => {
    const server = await answeringServer();
    const address = `127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const t = Date.now();
      const missing = { keyId: undefined, dataConverter: { failureConverterPath: '/nowhere/failure-converter.js' } };
      const err = await connectClient(settings(address), { dataConverter: missing }).catch((e: unknown) => e);
      expect(err).not.toBeInstanceOf(TemporalUnreachableError);
      expect(String((err as Error).message)).toContain('/nowhere/failure-converter.js');
      expect(Date.now() - t).toBeLessThan(5000);
      // the control: the same server with a converter that loads gives a client
      const ok = await connectClient(settings(address), { dataConverter: { keyId: undefined, dataConverter: {} } });
      await ok.connection.close();
    } finally {
      server.close();
    }
  });
});

/** A server that answers every gRPC call with one empty message and an OK status (GetSystemInfo is all a connect asks). */
async function answeringServer(): Promise<http2.Http2Server> {
  const server = http2.createServer();
  server.on('stream', (stream) => {
    stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
    stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
    stream.end(Buffer.alloc(5));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return server;
}
