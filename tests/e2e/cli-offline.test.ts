/**
 * The commands that need no Temporal server: help (also through `npx kiln`), the policy
 * dry-run tools and `kiln sandbox exec`, each as a user types them.
 */
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoWith, ROOT } from '../helpers/repo.js';
import { command, kiln, userEnv } from './cli.js';

const COMMANDS = [
  'setup',
  'dev',
  'worker',
  'run',
  'status',
  'list',
  'wait',
  'approve',
  'reject',
  'hint',
  'accept',
  'abandon',
  'cancel',
  'logs',
  'diff',
  'demo',
  'eval',
  'policy',
  'sandbox',
  'trust',
  'codec-server',
  'serve',
  'token',
  'cluster',
  'clean',
  'audit',
];

/** The "Commands:" section of commander's help, as {name → description} with one line each. */
function commandLines(help: string): Map<string, string> {
  const section = help.split(/^Commands:\n/m)[1] ?? '';
  const map = new Map<string, string>();
  for (const line of section.split('\n')) {
    const m = /^ {2}(\S+)(?: [<[][^\s]*[>\]])*\s{2,}(\S.*)$/.exec(line);
    if (m) map.set(m[1]!, m[2]!);
    else if (line.trim()) map.set(`(continuation) ${line.trim()}`, '');
  }
  return map;
}

describe('help', () => {
  it('`kiln --help` lists every command, each with a one-line description', async () => {
    const r = await kiln(['--help'], { env: userEnv() });
    expect(r.code).toBe(0);
    const lines = commandLines(r.stdout);
    for (const c of COMMANDS) expect(lines.get(c), `${c} in:\n${r.stdout}`).toMatch(/\w{3,}/);
    // a description that wraps would show up as a line with no command name
    expect([...lines.keys()].filter((k) => k.startsWith('(continuation)'))).toEqual([]);
  });

  it("`npx kiln --help` from the repo root runs this package's own bin, offline", async () => {
    // --offline: npx must not fetch a package called "kiln" from the registry
    const r = await command('npx', ['--offline', 'kiln', '--help'], { env: userEnv(), cwd: ROOT });
    expect(r.stderr).not.toMatch(/ERR!/);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('Run AI coding tasks as durable Temporal workflows');
    for (const c of COMMANDS) expect(commandLines(r.stdout).has(c)).toBe(true);
  });
});

describe('kiln trust', () => {
  it("trusts a repo's configuration as it is now, says what it unlocks, and forgets it on --revoke", async () => {
    const env = userEnv();
    const repo = repoWith({ '.kiln/config': JSON.stringify({ setup: ['npm ci'] }), 'AGENTS.md': '## Commands\n- Test: npm test\n' });
    const r = await kiln(['trust', '--repo', repo], { env });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`trusted ${repo}`);
    expect(r.stdout).toMatch(/checks: npm test\s+\[from AGENTS.md \(trusted\)\]/);
    expect(r.stdout).toMatch(/setup:\s+npm ci\s+\[from .kiln\/config \(trusted\)\]/);
    expect(existsSync(join(env.KILN_HOME!, 'trusted-repos.json'))).toBe(true);
    const off = await kiln(['trust', '--repo', repo, '--revoke'], { env });
    expect(off.stdout).toContain('no longer trusted');
  });

  it('outside a git repository it is a one-line usage error', async () => {
    const r = await kiln(['trust', '--repo', mkdtempSync(join(tmpdir(), 'kiln-nogit-'))], { env: userEnv() });
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
  });
});

describe('kiln policy', () => {
  it('check prints one JSON object with the decision, rule and reason', async () => {
    const ws = mkdtempSync(join(tmpdir(), 'kiln-ws-'));
    const r = await kiln(['policy', 'check', '--workspace', ws, '--tool', 'run_command', '--input', '{"command":"curl http://x","reason":"r"}', '--json'], {
      env: userEnv(),
    });
    expect(r.code).toBe(0);
    expect(r.stdout.trim().split('\n')).toHaveLength(1);
    const d = JSON.parse(r.stdout) as { decision: string; rule: string; reason: string };
    expect(d.decision).toBe('deny');
    expect(d.rule).toMatch(/network/);
    expect(d.reason).toMatch(/network/);
  });

  it('check with input that is not JSON is a one-line usage error (exit 2)', async () => {
    const ws = mkdtempSync(join(tmpdir(), 'kiln-ws-'));
    const r = await kiln(['policy', 'check', '--workspace', ws, '--tool', 'run_command', '--input', '{nope'], { env: userEnv() });
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/^kiln: --input is not valid JSON/);
  });

  it('test runs the bundled corpus: "N passed, 0 failed", exit 0', async () => {
    const r = await kiln(['policy', 'test', 'tests/policy-corpus/cases.jsonl'], { env: userEnv() });
    expect(r.code).toBe(0);
    const m = /^(\d+) passed, 0 failed$/m.exec(r.stdout);
    expect(m, r.stdout).not.toBeNull();
    expect(Number(m![1])).toBeGreaterThan(100);
  });

  it('test with a wrong expectation exits non-zero and prints the mismatch', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kiln-cases-'));
    const file = join(dir, 'cases.jsonl');
    writeFileSync(
      file,
      [
        { id: 'read-ok', tool: 'read_file', input: { path: 'src/a.ts' }, expect: 'allow', setup: { files: { 'src/a.ts': 'x\n' } } },
        { id: 'curl-is-fine', tool: 'run_command', input: { command: 'curl http://x', reason: 'r' }, expect: 'allow' },
      ]
        .map((c) => JSON.stringify(c))
        .join('\n') + '\n',
    );
    const r = await kiln(['policy', 'test', file], { env: userEnv() });
    expect(r.code).not.toBe(0);
    expect(r.stdout).toMatch(/curl-is-fine: expected allow, got deny/);
    expect(r.stdout).not.toMatch(/read-ok/);
    expect(r.stdout).toMatch(/^1 passed, 1 failed$/m);
  });

  it('redact replaces secrets read from stdin', async () => {
    const key = 'AKIA' + 'IOSFODNN7EXAMPLE';
    const r = await kiln(['policy', 'redact'], { env: userEnv(), input: `key=${key}\nplain line\n` });
    expect(r.code).toBe(0);
    expect(r.stdout).not.toContain(key);
    expect(r.stdout).toMatch(/REDACTED/);
    expect(r.stdout).toContain('plain line');
  });
});

describe('kiln sandbox exec', () => {
  // not under /tmp: inside the sandbox /tmp is a private scratch tmpfs, so a write there "works"
  // without reaching the host; a path on the real file system must be refused outright
  const base = mkdtempSync(join(existsSync('/var/tmp') ? '/var/tmp' : tmpdir(), 'kiln-sbx-'));

  it("exits with the command's code and keeps what it wrote in the workspace", async () => {
    const ws = join(base, 'ws1');
    mkdirSync(ws);
    const r = await kiln(['sandbox', 'exec', '--workspace', ws, '--', 'sh', '-c', 'echo hi > f; exit 3'], { env: userEnv() });
    expect(r.code).toBe(3);
    expect(existsSync(join(ws, 'f'))).toBe(true);
  });

  it('cannot write outside the workspace', async () => {
    const ws = join(base, 'ws2');
    mkdirSync(ws);
    const outside = join(base, 'outside.txt');
    const r = await kiln(['sandbox', 'exec', '--workspace', ws, '--', 'sh', '-c', `echo x > ${outside}`], { env: userEnv() });
    expect(r.code).not.toBe(0);
    expect(r.stderr + r.stdout).toMatch(/Read-only file system|Permission denied|No such file/);
    expect(existsSync(outside)).toBe(false);
    // /tmp inside is scratch: the write succeeds there and never lands on the host
    const hostTmp = join(mkdtempSync(join(tmpdir(), 'kiln-sbx-tmp-')), 'leak.txt');
    await kiln(['sandbox', 'exec', '--workspace', ws, '--', 'sh', '-c', `mkdir -p ${join(hostTmp, '..')}; echo x > ${hostTmp}`], { env: userEnv() });
    expect(existsSync(hostTmp)).toBe(false);
  });
});
