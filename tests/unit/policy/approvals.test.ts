/** The policy's approvals section: two-person kinds of call, authenticated approvers; a repo may add, never remove. */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { applyApprovalRules } from '../../../src/policy/approvals.js';
import { parsePolicyConfig, type PolicyConfig } from '../../../src/policy/config.js';
import { evaluate } from '../../../src/policy/index.js';
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
      expect(mergePolicy(user, repoPolicy, trusted).policy.approvals).toEqual({ authenticated: true, twoPerson: ['command:make release'] });
    }
  });

  it('control: an untrusted repo may add a two-person rule and require authenticated approvers', () => {
    const merged = mergePolicy(policy({ twoPerson: ['command:make release'] }), policy({ authenticated: true, twoPerson: ['command:make deploy*'] }), false);
    expect(merged.policy.approvals).toEqual({ authenticated: true, twoPerson: ['command:make release', 'command:make deploy*'] });
    expect(merged.ignored).toEqual([]);
  });
});
