/**
 * A zero-latency Anthropic-compatible Messages endpoint for timing harnesses side by side: it
 * answers at once, so the time between one reply and the next request is all the harness's.
 * Stateless about conversations: the turn is the number of assistant messages in the request
 * plus one. Turns before the last call one cheap shell command (MOCK_COMMAND) with whichever
 * shell tool the harness offers (Kiln's run_command, Claude Code's Bash, a generic bash) — for
 * Kiln, whose verifier wants a change, turn 1 also creates a file and the command doubles as the
 * run's check; the last turn calls Kiln's finish, or ends the turn with text. `stream: true` gets server-sent events.
 *
 *   node dist/bench/mock-anthropic.js [--port 8787] [--turns 20]
 *   → ANTHROPIC_BASE_URL=http://127.0.0.1:8787 ANTHROPIC_API_KEY=dummy <harness> …
 * It prints each request's timing as it goes and the per-turn spread on Ctrl-C.
 */
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { spread, type Spread } from './stats.js';

export interface MockRequest {
  /** performance.now() when the request's headers arrived */
  at: number;
  /** performance.now() when the reply's last byte was written */
  doneAt: number;
  turn: number;
  /** x-kiln-run style tag: the first user message's first 60 characters */
  conversation: string;
}

export interface MockAnthropic {
  url: string;
  requests: MockRequest[];
  /** forget the requests so far (between trials) */
  reset(): void;
  close(): Promise<void>;
}

type Block = { type: 'text'; text: string } | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> };
type Body = { model?: string; stream?: boolean; messages?: Array<{ role: string; content: unknown }>; tools?: Array<{ name: string }> };

/** The shell command the mock's turns ask for: prints, changes nothing, allowed by Kiln's default policy. */
export const MOCK_COMMAND = 'echo turn';

function reply(body: Body, turn: number, turns: number): { blocks: Block[]; stop: string } {
  const tools = new Set((body.tools ?? []).map((t) => t.name));
  const id = `toolu_mock_${turn}_${Math.random().toString(36).slice(2, 10)}`;
  if (turn >= turns) {
    if (tools.has('finish')) return { blocks: [{ type: 'tool_use', id, name: 'finish', input: { summary: `mock: ${turns} turns done` } }], stop: 'tool_use' };
    return { blocks: [{ type: 'text', text: 'Done.' }], stop: 'end_turn' };
  }
  // turn 1's is the run's check; later ones differ, as a loop that repeats itself is stuck
  const command = turn === 1 ? MOCK_COMMAND : `${MOCK_COMMAND} ${turn}`;
  if (tools.has('run_command')) {
    const run: Block = { type: 'tool_use', id, name: 'run_command', input: { command, reason: 'mock turn' } };
    // Kiln verifies that the run changed something: the first turn also makes a file
    if (turn === 1 && tools.has('create_file'))
      return {
        blocks: [{ type: 'tool_use', id: `${id}_c`, name: 'create_file', input: { path: 'mock-notes.txt', content: 'made by the mock\n' } }, run],
        stop: 'tool_use',
      };
    return { blocks: [run], stop: 'tool_use' };
  }
  for (const name of ['Bash', 'bash', 'shell']) {
    if (tools.has(name)) return { blocks: [{ type: 'tool_use', id, name, input: { command, description: 'mock turn' } }], stop: 'tool_use' };
  }
  // a harness without tools (mini-SWE-agent reads a fenced command from the text)
  return { blocks: [{ type: 'text', text: `Turn ${turn}.\n\n\`\`\`bash\n${command}\n\`\`\`` }], stop: 'end_turn' };
}

function firstUserText(body: Body): string {
  const first = body.messages?.find((m) => m.role === 'user');
  const c = first?.content;
  const text = typeof c === 'string' ? c : Array.isArray(c) ? ((c.find((b: { type?: string }) => b?.type === 'text') as { text?: string })?.text ?? '') : '';
  return text.slice(0, 60);
}

function sse(res: http.ServerResponse, message: Record<string, unknown>, blocks: Block[], stop: string): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'request-id': 'req_mock' });
  const ev = (type: string, data: Record<string, unknown>) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
  const out: string[] = [ev('message_start', { message: { ...message, content: [], stop_reason: null } })];
  blocks.forEach((b, index) => {
    if (b.type === 'text') {
      out.push(ev('content_block_start', { index, content_block: { type: 'text', text: '' } }));
      out.push(ev('content_block_delta', { index, delta: { type: 'text_delta', text: b.text } }));
    } else {
      out.push(ev('content_block_start', { index, content_block: { ...b, input: {} } }));
      out.push(ev('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: JSON.stringify(b.input) } }));
    }
    out.push(ev('content_block_stop', { index }));
  });
  out.push(ev('message_delta', { delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: 10 } }));
  out.push(ev('message_stop', {}));
  res.end(out.join(''));
}

export async function startMockAnthropic(o: {
  turns: number;
  port?: number;
  /** how long the "model" thinks before each reply: work a harness leaves for that time is hidden in it */
  thinkMs?: number;
  onRequest?: (r: MockRequest) => void;
}): Promise<MockAnthropic> {
  const requests: MockRequest[] = [];
  const server = http.createServer((req, res) => {
    const at = performance.now();
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      if (o.thinkMs) await new Promise((r) => setTimeout(r, o.thinkMs));
      if (req.method !== 'POST' || !req.url?.startsWith('/v1/messages')) {
        // count_tokens and friends: a harness's side calls are answered but not timed
        res.writeHead(req.url?.includes('count_tokens') ? 200 : 404, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify(
            req.url?.includes('count_tokens')
              ? { input_tokens: 100 }
              : { type: 'error', error: { type: 'not_found_error', message: 'mock: only /v1/messages' } },
          ),
        );
        return;
      }
      let body: Body;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Body;
      } catch {
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ type: 'error', error: { type: 'invalid_request_error', message: 'mock: body is not JSON' } }));
        return;
      }
      const turn = (body.messages ?? []).filter((m) => m.role === 'assistant').length + 1;
      const { blocks, stop } = reply(body, turn, o.turns);
      const message = {
        id: `msg_mock_${turn}`,
        type: 'message',
        role: 'assistant',
        model: body.model ?? 'mock',
        content: blocks,
        stop_reason: stop,
        stop_sequence: null,
        usage: { input_tokens: 100, output_tokens: 10, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 },
      };
      if (body.stream) sse(res, message, blocks, stop);
      else {
        const text = JSON.stringify(message);
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), 'request-id': 'req_mock' });
        res.end(text);
      }
      const r: MockRequest = { at, doneAt: performance.now(), turn, conversation: firstUserText(body) };
      requests.push(r);
      o.onRequest?.(r);
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(o.port ?? 0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    reset: () => void requests.splice(0),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * Harness time per turn from one conversation's requests: reply N sent → request N+1 arrived.
 * Only the main conversation counts (the one with the most requests): side calls a harness makes
 * (titles, summaries) are not turns.
 */
export function harnessTurns(requests: readonly MockRequest[]): { turnMs: Spread; turns: number; first: MockRequest | undefined } {
  const byConvo = new Map<string, MockRequest[]>();
  for (const r of requests) byConvo.set(r.conversation, [...(byConvo.get(r.conversation) ?? []), r]);
  const main = [...byConvo.values()].sort((a, b) => b.length - a.length)[0] ?? [];
  const gaps: number[] = [];
  for (let i = 1; i < main.length; i++) if (main[i]!.turn === main[i - 1]!.turn + 1) gaps.push(main[i]!.at - main[i - 1]!.doneAt);
  return { turnMs: spread(gaps), turns: main.length, first: requests[0] };
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  const arg = (name: string, d: number) => {
    const i = process.argv.indexOf(name);
    const n = i < 0 ? d : Number(process.argv[i + 1]);
    if (!Number.isInteger(n) || n < 0) {
      process.stderr.write(`mock-anthropic: ${name} needs a whole number\n`);
      process.exit(2);
    }
    return n;
  };
  const mock = await startMockAnthropic({
    turns: arg('--turns', 20),
    port: arg('--port', 8787),
    onRequest: (r) => process.stdout.write(`turn ${r.turn}  at ${r.at.toFixed(1)} ms  (${r.conversation.slice(0, 40).replace(/\s+/g, ' ')})\n`),
  });
  process.stdout.write(`mock Anthropic API at ${mock.url}: ANTHROPIC_BASE_URL=${mock.url} ANTHROPIC_API_KEY=dummy\n`);
  process.once('SIGINT', () => {
    const h = harnessTurns(mock.requests);
    process.stdout.write(`\n${h.turns} turns; harness time per turn p50 ${h.turnMs.p50} ms, p95 ${h.turnMs.p95} ms (n=${h.turnMs.n})\n`);
    void mock.close().then(() => process.exit(0));
  });
}
