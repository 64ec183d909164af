/**
 * MCP calls under the policy: only the run's own namespaced tools, ask by default, rules per
 * server and tool with argument patterns, and a repo that declares servers or loosens rules is
 * heard only when trusted. Each attack sits next to the control that must still pass.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parsePolicyConfig } from '../../../src/policy/config.js';
import { describeRunSettings, loadRunSettings } from '../../../src/policy/precedence.js';
import { trustRepo } from '../../../src/policy/trust.js';
import { evaluate } from '../../../src/tools/evaluate.js';
import { tempRepo, type TempRepo } from './helpers.js';

let repo: TempRepo;
let home: string;
beforeEach(() => {
  repo = tempRepo();
  home = mkdtempSync(join(tmpdir(), 'kiln-home-'));
});
afterEach(() => {
  repo.cleanup();
  rmSync(home, { recursive: true, force: true });
});

const TOOLS = ['mcp__files__read_text_file', 'mcp__files__write_file', 'mcp__everything__echo'];
const withRules = (rules: unknown[]) => repo.ctx({ config: parsePolicyConfig({ mcp: { rules } }), mcpTools: TOOLS });

describe('judging an MCP call', () => {
  it('control: a discovered tool with no rule asks a person, bound to the exact arguments', async () => {
    const d = await evaluate('mcp__everything__echo', { message: 'hi' }, withRules([]));
    expect(d).toMatchObject({ decision: 'ask', rule: 'mcp.default', grantKey: 'mcp:mcp__everything__echo' });
    const other = await evaluate('mcp__everything__echo', { message: 'hi!' }, withRules([]));
    expect(other.hash).not.toBe(d.hash);
  });

  it('attack: an MCP name the run did not discover, or a built-in name dressed as one, is denied', async () => {
    for (const name of ['mcp__everything__get_env', 'mcp__evil__echo', 'mcp__', 'mcp__everything__', 'mcp__read_file']) {
      expect(await evaluate(name, { message: 'hi' }, withRules([{ tool: '*', decision: 'allow' }])), name).toMatchObject({
        decision: 'deny',
        rule: 'mcp.unknown-tool',
      });
    }
    // with no MCP tools at all (a run whose servers did not start)
    expect(await evaluate('mcp__everything__echo', {}, repo.ctx())).toMatchObject({ decision: 'deny', rule: 'mcp.unknown-tool' });
  });

  it('rules per server and tool: allow, deny, and the most severe of those that match wins', async () => {
    const ctx = withRules([
      { tool: 'files__*', decision: 'allow' },
      { tool: 'files__write_*', decision: 'deny' },
    ]);
    expect(await evaluate('mcp__files__read_text_file', { path: '/w/a.txt' }, ctx)).toMatchObject({ decision: 'allow', rule: 'mcp.rule' });
    expect(await evaluate('mcp__files__write_file', { path: '/w/a.txt', content: 'x' }, ctx)).toMatchObject({ decision: 'deny', rule: 'mcp.rule' });
    expect(await evaluate('mcp__everything__echo', { message: 'x' }, ctx)).toMatchObject({ decision: 'ask', rule: 'mcp.default' });
  });

  it('argument patterns match the whole value: an allowed prefix does not let a longer value through', async () => {
    const ctx = withRules([{ tool: 'files__read_text_file', decision: 'allow', args: { path: '/w/docs/[^/]+\\.md' } }]);
    expect(await evaluate('mcp__files__read_text_file', { path: '/w/docs/a.md' }, ctx)).toMatchObject({ decision: 'allow' });
    // attack: smuggling past an unanchored pattern, a missing argument, a non-string value
    for (const args of [{ path: '/w/docs/a.md/../../etc/passwd' }, { path: '/w/docs/a.md\n/etc/x' }, {}, { path: ['/w/docs/a.md'] }]) {
      expect(await evaluate('mcp__files__read_text_file', args, ctx), JSON.stringify(args)).toMatchObject({ decision: 'ask', rule: 'mcp.default' });
    }
  });

  it('attack: arguments that are not an object, or too large to judge, are denied; auto mode refuses what would ask', async () => {
    expect(await evaluate('mcp__everything__echo', ['x'], withRules([]))).toMatchObject({ decision: 'deny', rule: 'input.invalid' });
    expect(await evaluate('mcp__everything__echo', { message: 'x'.repeat(70_000) }, withRules([{ tool: '*', decision: 'allow' }]))).toMatchObject({
      decision: 'deny',
      rule: 'mcp.args-too-large',
    });
    expect(await evaluate('mcp__everything__echo', { message: 'x' }, { ...withRules([]), mode: 'auto' })).toMatchObject({ decision: 'deny' });
  });

  it('two people can be required for one MCP tool, or for every MCP call by its rule', async () => {
    const { applyApprovalRules } = await import('../../../src/policy/approvals.js');
    const config = parsePolicyConfig({ approvals: { twoPerson: ['tool:mcp__everything__echo'] }, mcp: { rules: [{ tool: '*', decision: 'allow' }] } });
    const ctx = { ...repo.ctx({ config, mcpTools: TOOLS }) };
    const echo = await evaluate('mcp__everything__echo', { message: 'x' }, ctx);
    expect(applyApprovalRules(config, 'mcp__everything__echo', echo)).toMatchObject({ decision: { decision: 'ask' }, needs: { approvers: 2 } });
    const read = await evaluate('mcp__files__read_text_file', { path: 'x' }, ctx);
    expect(applyApprovalRules(config, 'mcp__files__read_text_file', read)).toMatchObject({ decision: { decision: 'allow' } });
    expect(() => parsePolicyConfig({ approvals: { twoPerson: ['tool:mcp_echo'] } })).toThrow(/no tool is named mcp_echo/);
  });

  it('bad config gets one line: a server name with "_", both command and url, a pattern that is no regex', () => {
    expect(() => parsePolicyConfig({ mcp: { servers: { my_srv: { command: ['x'] } } } })).toThrow(/server name "my_srv"/);
    expect(() => parsePolicyConfig({ mcp: { servers: { a: { command: ['x'], url: 'http://h/' } } } })).toThrow(/exactly one of/);
    expect(() => parsePolicyConfig({ mcp: { rules: [{ tool: 'a__b', decision: 'allow', args: { p: '(' } }] } })).toThrow(/not a regular expression/);
  });
});

describe('who may declare servers and loosen rules', () => {
  const REPO_MCP = {
    mcp: {
      servers: { evil: { command: ['sh', '-c', 'curl evil'] } },
      rules: [
        { tool: '*', decision: 'allow' },
        { tool: 'files__*', decision: 'deny' },
      ],
    },
  };

  it("attack: an untrusted repo's servers are not started and its allow rules ignored; its deny rules count; each ignored part is said", async () => {
    repo.file('.kiln/policy.json', JSON.stringify(REPO_MCP));
    const s = await loadRunSettings(repo.dir, { home, approvalMode: 'default' });
    expect(s.policy.mcp.servers).toEqual({});
    expect(s.policy.mcp.rules).toEqual([{ tool: 'files__*', decision: 'deny' }]);
    expect(s.ignored.join('\n')).toMatch(/mcp server "evil": not started, the repo's configuration is not trusted/);
    expect(s.ignored.join('\n')).toMatch(/mcp rules allowing \["\*"\]: ignored/);
  });

  it("control: the same repo once trusted starts its servers; the user's own servers always start and win a name", async () => {
    repo.file('.kiln/policy.json', JSON.stringify({ mcp: { ...REPO_MCP.mcp, servers: { ...REPO_MCP.mcp.servers, mine: { command: ['repo-version'] } } } }));
    trustRepo(repo.dir, home);
    const { writeFileSync } = await import('node:fs');
    writeFileSync(join(home, 'policy.json'), JSON.stringify({ mcp: { servers: { mine: { command: ['user-version'] } } } }));
    const s = await loadRunSettings(repo.dir, { home, approvalMode: 'default' });
    expect(Object.keys(s.policy.mcp.servers).sort()).toEqual(['evil', 'mine']);
    expect(s.policy.mcp.servers.mine!.command).toEqual(['user-version']);
    expect(s.policy.mcp.rules).toHaveLength(2);
    expect(describeRunSettings(s)).toContain('mcp:    evil (stdio) · mine (stdio)');
  });

  it("a repo's host list: granted only with the trust that starts its server, gone when it changes, never added to the user's server of a name", async () => {
    const { writeFileSync } = await import('node:fs');
    const repoMcp = (hosts: string[]) => ({
      mcp: {
        servers: {
          fetcher: { command: ['fetcher'], network: { hosts } },
          mine: { command: ['repo-version'], network: { hosts: ['*.evil.example'] } },
        },
      },
    });
    writeFileSync(join(home, 'policy.json'), JSON.stringify({ mcp: { servers: { mine: { command: ['user-version'] } } } }));
    repo.file('.kiln/policy.json', JSON.stringify(repoMcp(['api.example.com'])));
    // untrusted: the server does not start, so its hosts are no one's
    expect((await loadRunSettings(repo.dir, { home, approvalMode: 'default' })).policy.mcp.servers.fetcher).toBeUndefined();
    trustRepo(repo.dir, home);
    const s = await loadRunSettings(repo.dir, { home, approvalMode: 'default' });
    expect(s.policy.mcp.servers.fetcher!.network).toEqual({ hosts: ['api.example.com'] });
    // the user's server of the same name is the user's, network and all
    expect(s.policy.mcp.servers.mine!.network).toBeUndefined();
    expect(describeRunSettings(s)).toContain('mcp:    fetcher (stdio, network: api.example.com) · mine (stdio)');
    // attack: widening the list after trust untrusts the repo, and the server is not started
    repo.file('.kiln/policy.json', JSON.stringify(repoMcp(['api.example.com', 'exfil.example.net'])));
    const changed = await loadRunSettings(repo.dir, { home, approvalMode: 'default' });
    expect(changed.trust).toBe('changed');
    expect(changed.policy.mcp.servers.fetcher).toBeUndefined();
    expect(changed.ignored.join('\n')).toMatch(/mcp server "fetcher": not started/);
  });
});
