/** The policy's approvals section: two-person kinds of call, authenticated approvers; a repo may add, never remove. */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { applyApprovalRules, judgePatchSize, judgeSetup } from '../../../src/policy/approvals.js';
import { parsePolicyConfig, type PolicyConfig } from '../../../src/policy/config.js';
import { evaluate } from '../../../src/tools/evaluate.js';
import { mergePolicy } from '../../../src/policy/precedence.js';
import { tempRepo, type TempRepo } from './helpers.js';

let repo: TempRepo;
beforeEach(() => {
  repo = tempRepo();
  repo.file('src/a.ts', 'export const a = 1;\n');
});
afterEach(() => repo.cleanup());

const policy = (approvals: unknown, extra: Record<string, unknown> = {}) => parsePolicyConfig({ approvals, ...extra });
async function judge(config: PolicyConfig, tool: string, input: unknown) {
  const d = await evaluate(tool, input, repo.ctx({ config }));
  return applyApprovalRules(config, tool, d);
}
const cmd = (command: string) => ({ command, reason: 'x' });

describe('approvals.twoPerson', () => {
  it('a command matching a two-person rule asks for two authenticated approvers, even where the policy would allow it', async () => {
    const config = policy({ twoPerson: ['command:make release*'] }, { commands: { allow: ['make release'] } });
    expect((await evaluate('run_command', cmd('make release VERSION=2'), repo.ctx({ config }))).decision).toBe('allow');
    const { decision, needs } = await judge(config, 'run_command', cmd('make release VERSION=2'));
    expect(decision).toMatchObject({ decision: 'ask', rule: 'approvals.two-person' });
    expect(decision.grantKey).toBeUndefined();
    expect(decision.hash).toMatch(/^[0-9a-f]{64}$/);
    expect(needs).toEqual({ approvers: 2, authenticated: true, twoPersonRule: 'command:make release*' });
  });

  it('attack: the two-person command hidden after another, or inside bash -c, is still found (the parsed segments are matched)', async () => {
    const config = policy({ twoPerson: ['command:make release'] });
    for (const c of ['npm test && make release', 'npm test; make release', 'bash -c "make release"']) {
      expect((await judge(config, 'run_command', cmd(c))).needs.approvers, c).toBe(2);
    }
  });

  it('control: a command that only looks alike needs one approver, or none', async () => {
    const config = policy({ twoPerson: ['command:make release'] });
    const r = await judge(config, 'run_command', cmd('npm test'));
    expect(r.needs.approvers).toBe(1);
    expect(r.decision.decision).toBe('allow');
    expect((await judge(config, 'run_command', cmd('echo make release'))).needs.approvers).toBe(1);
    expect((await judge(config, 'run_command', cmd('make test'))).needs.approvers).toBe(1);
  });

  it('a deny stays a deny: a two-person rule never turns a refusal into a question', async () => {
    const config = policy({ twoPerson: ['command:cat*'] });
    const r = await judge(config, 'run_command', cmd('cat ~/.ssh/id_rsa'));
    expect(r.decision.decision).toBe('deny');
  });

  it('rule: and tool: kinds match the policy rule that asked and the tool', async () => {
    const byTool = await judge(policy({ twoPerson: ['tool:edit'] }), 'edit', { path: 'src/a.ts', old_string: 'a = 1', new_string: 'a = 2' });
    expect(byTool.needs.approvers).toBe(2);
    const install = cmd('npm install left-pad');
    expect((await judge(policy({ twoPerson: ['rule:command.install'] }), 'run_command', install)).needs.approvers).toBe(2);
    expect((await judge(policy({ twoPerson: ['rule:command'] }), 'run_command', install)).needs.approvers).toBe(2);
    expect((await judge(policy({ twoPerson: ['rule:command.inst'] }), 'run_command', install)).needs.approvers).toBe(1);
  });

  it('authenticated: every approval needs an authenticated approver, two-person ones still two', async () => {
    const config = policy({ authenticated: true });
    const d = await evaluate('run_command', cmd('npm install left-pad'), repo.ctx({ config }));
    expect(applyApprovalRules(config, 'run_command', d).needs).toEqual({ approvers: 1, authenticated: true });
  });

  it('bad rules are refused with what to write instead', () => {
    expect(() => policy({ twoPerson: ['publish'] })).toThrow(/approvals\.twoPerson.*expected "command:<rule as in commands.ask>"/);
    expect(() => policy({ twoPerson: ['tool:rm'] })).toThrow(/no tool is named rm/);
    expect(() => policy({ twoPerson: ['command:'] })).toThrow(/needs what follows the colon/);
  });
});

describe('precedence: a repo may add approvers, never remove them', () => {
  it("attack: a repo policy without the user's two-person rule or authenticated flag keeps both, trusted or not", () => {
    const user = policy({ authenticated: true, twoPerson: ['command:make release'] });
    const repoPolicy = policy({ authenticated: false, twoPerson: [] });
    for (const trusted of [false, true]) {
      expect(mergePolicy(user, repoPolicy, trusted).policy.approvals).toEqual({ authenticated: true, twoPerson: ['command:make release'], setup: [] });
    }
  });

  it('attack: a repo cannot let the starter count as an approver, trusted or not; control: the user can, and a repo can take it back', async () => {
    const two = ['command:make release'];
    for (const trusted of [false, true]) {
      expect(mergePolicy(policy({ twoPerson: two }), policy({ starterCounts: true }), trusted).policy.approvals.starterCounts).toBeUndefined();
      expect(mergePolicy(policy({ twoPerson: two, starterCounts: true }), policy({}), trusted).policy.approvals.starterCounts).toBe(true);
      expect(mergePolicy(policy({ starterCounts: true }), policy({ starterCounts: false }), trusted).policy.approvals.starterCounts).toBeUndefined();
    }
    const merged = mergePolicy(policy({ twoPerson: two, starterCounts: true }), policy({}), true).policy;
    expect((await judge(merged, 'run_command', cmd('make release'))).needs).toMatchObject({ approvers: 2, starterCounts: true });
    expect((await judge(policy({ twoPerson: two }), 'run_command', cmd('make release'))).needs.starterCounts).toBeUndefined();
  });

  it('control: an untrusted repo may add a two-person rule and require authenticated approvers', () => {
    const merged = mergePolicy(policy({ twoPerson: ['command:make release'] }), policy({ authenticated: true, twoPerson: ['command:make deploy*'] }), false);
    expect(merged.policy.approvals).toEqual({ authenticated: true, twoPerson: ['command:make release', 'command:make deploy*'], setup: [] });
    expect(merged.ignored).toEqual([]);
  });
});

describe('approvals.setup and setup: two-person entries (setup runs with network)', () => {
  it('a setup command the policy names waits for one approver; a setup: twoPerson entry for two different authenticated ones', () => {
    const one = judgeSetup(policy({ setup: ['npm ci'] }), ['npm ci', 'node scripts/gen.js']);
    expect(one).toMatchObject({ rule: 'approvals.setup', needs: { approvers: 1, authenticated: false } });
    expect(one!.reason).toContain('"npm ci"');
    expect(one!.reason).not.toContain('gen.js');
    const two = judgeSetup(policy({ twoPerson: ['setup:*'] }), ['pip install -r requirements.txt']);
    expect(two).toMatchObject({ rule: 'approvals.setup.two-person', needs: { approvers: 2, authenticated: true, twoPersonRule: 'setup:*' } });
    // authenticated: true makes the one approver an authenticated one
    expect(judgeSetup(policy({ setup: ['*'], authenticated: true }), ['make deps'])!.needs).toMatchObject({ approvers: 1, authenticated: true });
  });

  it('control: setup no rule names, and no setup at all, need nobody; a setup: entry never matches a tool call', async () => {
    expect(judgeSetup(policy({ setup: ['npm ci'] }), ['make deps'])).toBeUndefined();
    expect(judgeSetup(policy({ twoPerson: ['setup:*'] }), [])).toBeUndefined();
    const r = await judge(policy({ twoPerson: ['setup:*'] }), 'run_command', cmd('npm test'));
    expect(r.needs.approvers).toBe(1);
  });
});

describe('approvals.patch (a patch over N changed lines)', () => {
  it('over the limit asks two different authenticated approvers by default; at or under it nobody', () => {
    const config = policy({ patch: { overLines: 10 } });
    expect(judgePatchSize(config, 11)).toMatchObject({ rule: 'approvals.patch', needs: { approvers: 2, authenticated: true } });
    expect(judgePatchSize(config, 11)!.reason).toContain("changes 11 lines, over the policy's 10");
    expect(judgePatchSize(config, 10)).toBeUndefined();
    expect(judgePatchSize(policy({}), 100_000)).toBeUndefined();
    expect(judgePatchSize(policy({ patch: { overLines: 0, approvers: 1 } }), 1)!.needs).toMatchObject({ approvers: 1, authenticated: false });
  });

  it('bad values are refused naming the field', () => {
    expect(() => policy({ patch: { overLines: -1 } })).toThrow(/approvals\.patch\.overLines/);
    expect(() => policy({ patch: { overLines: 10, approvers: 0 } })).toThrow(/approvals\.patch\.approvers/);
    expect(() => policy({ patch: { lines: 10 } })).toThrow(/approvals\.patch/);
  });

  it("attack: a repo cannot loosen the user's patch rule or drop its setup rules; it may tighten them", () => {
    const user = policy({ setup: ['npm ci'], patch: { overLines: 100, approvers: 2 } });
    for (const trusted of [false, true]) {
      const merged = mergePolicy(user, policy({ patch: { overLines: 10000, approvers: 1 } }), trusted).policy.approvals;
      expect(merged).toMatchObject({ setup: ['npm ci'], patch: { overLines: 100, approvers: 2 } });
    }
    const tighter = mergePolicy(user, policy({ setup: ['make deps'], patch: { overLines: 20, approvers: 1 } }), false).policy.approvals;
    expect(tighter).toMatchObject({ setup: ['npm ci', 'make deps'], patch: { overLines: 20, approvers: 2 } });
    expect(mergePolicy(policy({}), policy({ patch: { overLines: 5 } }), false).policy.approvals.patch).toEqual({ overLines: 5, approvers: 2 });
  });
});
