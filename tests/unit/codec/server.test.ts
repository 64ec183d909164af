/** The codec server over real HTTP: each refusal next to the request that must still work. */
import { randomBytes } from 'node:crypto';
import { defaultPayloadConverter } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AesGcmCodec } from '../../../src/codec/aes-gcm.js';
import { startCodecServer, type CodecServer } from '../../../src/codec/server.js';

const UI = 'http://127.0.0.1:8233';
const CANARY = 'canary-codec-server-31337';
const codec = new AesGcmCodec({ active: 'k1', keys: new Map([['k1', randomBytes(32)]]) });
let server: CodecServer;
let sealedJson: unknown;

beforeAll(async () => {
  server = await startCodecServer({ codec, port: 0, origins: [UI], token: 'tok-' + randomBytes(8).toString('hex') });
  const [sealed] = await codec.encode([defaultPayloadConverter.toPayload({ goal: CANARY })!]);
  sealedJson = { payloads: [temporal.api.common.v1.Payload.toObject(temporal.api.common.v1.Payload.create(sealed), { bytes: String })] };
});
afterAll(() => server.close());

function post(path: string, headers: Record<string, string>, body: unknown = sealedJson) {
  return fetch(server.url + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-namespace': 'default', ...headers },
    body: JSON.stringify(body),
  });
}
const decoded = async (r: Response) => {
  const body = (await r.json()) as { payloads: { data: string }[] };
  return Buffer.from(body.payloads[0]!.data, 'base64').toString();
};

describe('kiln codec-server', () => {
  it('control: the UI origin with the token decodes, and CORS grants that origin', async () => {
    const r = await post('/decode', { origin: UI, authorization: `Bearer ${server.token}` });
    expect(r.status).toBe(200);
    expect(r.headers.get('access-control-allow-origin')).toBe(UI);
    expect(await decoded(r)).toContain(CANARY);
  });

  it('control: the token as the endpoint path (a UI without login) decodes too', async () => {
    const r = await post(`/${server.token}/decode`, { origin: UI });
    expect(r.status).toBe(200);
    expect(await decoded(r)).toContain(CANARY);
  });

  it('attack: no token, or a wrong one, is 401 and reveals nothing', async () => {
    const tries: Record<string, string>[] = [{ origin: UI }, { origin: UI, authorization: 'Bearer nope' }, { authorization: `Bearer ${server.token}x` }];
    for (const headers of tries) {
      const r = await post('/decode', headers);
      expect(r.status).toBe(401);
      expect(await r.text()).not.toContain(CANARY);
    }
    expect((await post('/not-the-token/decode', { origin: UI })).status).toBe(401);
  });

  it('attack: another origin is 403 even with the token, and gets no CORS grant', async () => {
    const r = await post('/decode', { origin: 'http://evil.example', authorization: `Bearer ${server.token}` });
    expect(r.status).toBe(403);
    expect(r.headers.get('access-control-allow-origin')).toBeNull();
    expect(await r.text()).not.toContain(CANARY);
  });

  it('preflight: granted to the UI origin with the headers it sends, refused to others', async () => {
    const ok = await fetch(server.url + '/decode', {
      method: 'OPTIONS',
      headers: { origin: UI, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,content-type,x-namespace' },
    });
    expect(ok.status).toBe(204);
    expect(ok.headers.get('access-control-allow-origin')).toBe(UI);
    expect(ok.headers.get('access-control-allow-headers')).toMatch(/authorization/);
    const bad = await fetch(server.url + '/decode', {
      method: 'OPTIONS',
      headers: { origin: 'http://127.0.0.1:9999', 'access-control-request-method': 'POST' },
    });
    expect(bad.status).toBe(403);
    expect(bad.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('encode then decode round-trips through HTTP', async () => {
    const auth = { authorization: `Bearer ${server.token}` };
    const plain = {
      payloads: [temporal.api.common.v1.Payload.toObject(temporal.api.common.v1.Payload.create(defaultPayloadConverter.toPayload('hi')!), { bytes: String })],
    };
    const enc = await post('/encode', auth, plain);
    expect(enc.status).toBe(200);
    const encBody = await enc.json();
    expect(JSON.stringify(encBody)).not.toContain(Buffer.from('"hi"').toString('base64'));
    expect(await decoded(await post('/decode', auth, encBody))).toBe('"hi"');
  });

  it('bad bodies get a clear 4xx', async () => {
    const auth = { authorization: `Bearer ${server.token}` };
    expect((await post('/decode', auth, { nope: 1 })).status).toBe(400);
    const r = await fetch(server.url + '/decode', { method: 'POST', headers: auth, body: '{' });
    expect(r.status).toBe(400);
    expect((await fetch(server.url + '/other', { method: 'POST', headers: auth, body: '{}' })).status).toBe(404);
  });
});
