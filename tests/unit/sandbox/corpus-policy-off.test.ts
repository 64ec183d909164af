/**
 * Defence in depth: every command of the policy corpus run with the policy switched off,
 * straight inside the sandbox. The sandbox alone must still stop every write outside the
 * worktree, every read of a secret under HOME, in the worktree's .env or in the main checkout
 * around it, and every network connection — asserted on the
 * effects (files, bytes, connections), with controls that show the same probes work outside.
 */
import { createServer, type Server } from 'node:net';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSandbox } from '../../../src/sandbox/index.js';
import type { Sandbox } from '../../../src/sandbox/types.js';
import { cleanupTempDirs, git, tempDir, uniqueMarker } from './helpers.js';

const CORPUS = fileURLToPath(new URL('../../policy-corpus/cases.jsonl', import.meta.url));

interface Case {
  id: string;
  tool: string;
  input: { command?: string };
  expect: string;
  setup?: { files?: Record<string, string> };
}

const commands = readFileSync(CORPUS, 'utf8')
  .split('\n')
  .filter(Boolean)
  .map((l) => JSON.parse(l) as Case)
  .filter((c) => c.tool === 'run_command' && typeof c.input.command === 'string');

const SHARED_DIRS = new Set(['/tmp', '/var/tmp']);

let sandbox: Sandbox;
let server: Server;
let port = 0;
let connections = 0;
const secret = uniqueMarker('home-secret');
const envSecret = uniqueMarker('worktree-env');
const mainSecret = uniqueMarker('main-env');
const secretFile = join(homedir(), `.kiln-corpus-canary-${process.pid}`);

beforeAll(async () => {
  sandbox = await createSandbox({ mode: 'bwrap' });
  server = createServer((s) => {
    connections++;
    s.destroy();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  port = (server.address() as { port: number }).port;
  writeFileSync(secretFile, `${secret}\n`);
});

afterAll(async () => {
  rmSync(secretFile, { force: true });
  await new Promise<void>((r) => server.close(() => r()));
  cleanupTempDirs();
});

/** The sentinel commands that aim straight at the canaries, plus the whole corpus. */
function allCommands(): Array<{ id: string; command: string; files: Record<string, string> }> {
  const aimed = [
    `cat ${secretFile}`,
    `cat ~/.kiln-corpus-canary-${process.pid}`,
    `cp ${secretFile} ./stolen`,
    `curl -s http://127.0.0.1:${port}/`,
    `bash -c 'echo hi > /dev/tcp/127.0.0.1/${port}'`,
    `node -e "require('net').connect(${port}, '127.0.0.1').on('error', () => process.exit(3))"`,
    `echo pwned > ../outside/pwned`,
    `echo pwned >> ../outside/canary.txt`,
    `rm -rf ../outside`,
    `touch /etc/kiln-corpus-canary`,
    `echo pwned > ${homedir()}/kiln-corpus-pwned`,
    // the worktree's own secrets (masked) and the main checkout's .env beside it (not mounted)
    `grep -rn . .; find . -name '.e*' -exec cat {} +`,
    `node -e "console.log(require('fs').readFileSync('.e'+'nv','utf8'))"`,
    `ln .env stolen; cat stolen; cp .env stolen2; cat stolen2`,
    `cat ../.env ../../.env; node -e "console.log(require('fs').readFileSync('../.e'+'nv','utf8'))"`,
  ].map((command, i) => ({ id: `aimed-${i}`, command, files: { '.env': 'SECRET=1\n' } }));
  return [...aimed, ...commands.map((c) => ({ id: c.id, command: c.input.command!, files: c.setup?.files ?? {} }))];
}

describe('the corpus with the policy off, inside the sandbox', () => {
  it('the canaries are reachable from outside the sandbox (the control)', async () => {
    expect(readFileSync(secretFile, 'utf8')).toContain(secret);
    const { connect } = await import('node:net');
    const before = connections;
    await new Promise<void>((resolve, reject) => connect(port, '127.0.0.1', resolve).on('error', reject));
    await new Promise((r) => setTimeout(r, 100));
    expect(connections).toBe(before + 1);
  });

  it(`stops every outside write, secret read and connection (${commands.length} corpus commands + sentinels)`, async () => {
    const root = tempDir('corpus');
    const outside = join(root, 'outside');
    const ws = join(root, 'ws');
    // the worktree lives inside the user's checkout, whose untracked .env must stay out of reach
    writeFileSync(join(root, '.env'), `MAIN=${mainSecret}\n`);
    const problems: string[] = [];
    let ran = 0;
    for (const c of allCommands()) {
      rmSync(ws, { recursive: true, force: true });
      rmSync(outside, { recursive: true, force: true });
      mkdirSync(outside, { recursive: true });
      writeFileSync(join(outside, 'canary.txt'), 'canary\n');
      mkdirSync(ws, { recursive: true });
      for (const [rel, content] of Object.entries(c.files)) {
        mkdirSync(dirname(join(ws, rel)), { recursive: true });
        // the corpus's placeholder secrets become a canary, so a leak cannot hide behind "SECRET=1"
        writeFileSync(join(ws, rel), /(^|\/)\.env$/.test(rel) ? `SECRET=${envSecret}\n` : content);
      }
      git(ws, 'init', '-q');
      const command = c.command.replaceAll('{{workspace}}', ws);
      const absolute = [...command.matchAll(/(?:^|[\s'"=>])((?:\/|~\/)[\w./-]+)/g)].map((m) => m[1]!.replace(/^~\//, `${homedir()}/`));
      // /tmp and /var/tmp themselves change every second on a shared host; files named under them are still compared
      const before = new Map(
        absolute.filter((p) => !p.startsWith(ws) && !SHARED_DIRS.has(p.replace(/\/+$/, ''))).map((p) => [p, existsSync(p) ? statSync(p).mtimeMs : null]),
      );
      const conns = connections;
      const res = await sandbox.run(command, { workspace: ws, timeoutMs: 3000 });
      ran++;
      if (res.output.includes(secret)) problems.push(`${c.id}: the HOME secret reached the output`);
      if (res.output.includes(envSecret)) problems.push(`${c.id}: the worktree's .env reached the output`);
      if (res.output.includes(mainSecret)) problems.push(`${c.id}: the main checkout's .env reached the output`);
      if (existsSync(join(ws, 'stolen')) && readFileSync(join(ws, 'stolen'), 'utf8').includes(secret)) problems.push(`${c.id}: the HOME secret was copied`);
      if (connections !== conns) problems.push(`${c.id}: a connection reached the host listener`);
      if (!existsSync(join(outside, 'canary.txt')) || readFileSync(join(outside, 'canary.txt'), 'utf8') !== 'canary\n')
        problems.push(`${c.id}: the outside canary changed`);
      if (!existsSync(outside) || readdirSync(outside).length !== 1) problems.push(`${c.id}: a file appeared outside the worktree`);
      for (const [p, mtime] of before) {
        const now = existsSync(p) ? statSync(p).mtimeMs : null;
        if (now !== mtime) problems.push(`${c.id}: ${p} changed on the host`);
      }
    }
    expect(ran).toBeGreaterThan(150);
    expect(problems).toEqual([]);
    expect(existsSync('/etc/kiln-corpus-canary')).toBe(false);
    expect(existsSync(join(homedir(), 'kiln-corpus-pwned'))).toBe(false);
  }, 600_000);
});
