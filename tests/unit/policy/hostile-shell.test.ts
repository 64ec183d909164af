import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { policyCheck } from '../../../src/cli/actions/policy.js';
import { evaluate } from '../../../src/tools/evaluate.js';
import { SHELL_LIMITS } from '../../../src/shell/parse.js';
import { tempRepo, type TempRepo } from './helpers.js';

/*
 * The judge against text built to break it rather than to run: every construct nested past any
 * depth a person writes, very long words and chains, and random mixtures of them. Whatever comes
 * in, the judge answers with a decision, in bounded time and output, and the parser still works
 * for the next command (a trap inside tree-sitter's wasm would leave it broken for the process).
 */

let repo: TempRepo;
beforeAll(() => {
  repo = tempRepo();
  repo.file('src/app.ts');
  repo.file('package.json', '{"scripts":{"test":"vitest run"}}\n');
});
afterAll(() => repo.cleanup());

const judge = (command: string) => evaluate('run_command', { command, reason: 'r' }, repo.ctx());

/** `kiln policy check --json --explain`, as the CLI prints it */
const checkJson = async (command: string) => {
  const out: string[] = [];
  await policyCheck(
    { workspace: repo.dir, tool: 'run_command', input: JSON.stringify({ command, reason: 'r' }), mode: 'default', json: true, explain: true },
    (s) => out.push(s),
  );
  return out.join('\n');
};

const nest = (n: number, open: string, inner: string, close: string) => open.repeat(n) + inner + close.repeat(n);

/** Each construct that nests, as a function of its depth. */
const NESTED: Record<string, (n: number) => string> = {
  'command substitution': (n) => `echo ${nest(n, '$(', 'id', ')')}`,
  'quoted command substitution': (n) => `echo ${nest(n, '"$(echo ', 'id', ')"')}`,
  backticks: (n) => {
    let s = 'id';
    // each level doubles the backslashes before it: stop once it is past any size limit
    for (let i = 0; i < n && s.length <= 4 * SHELL_LIMITS.chars; i++) s = `echo \`${s.replace(/[\\`$]/g, '\\$&')}\``;
    return s;
  },
  subshell: (n) => nest(n, '( ', 'ls', ' )'),
  group: (n) => nest(n, '{ ', 'ls; ', '}; ').replace(/; $/, ''),
  arithmetic: (n) => `echo $(( ${nest(n, '(', '1', ')')} ))`,
  'nested arithmetic expansion': (n) => `echo ${nest(n, '$((1+', '1', '))')}`,
  'process substitution': (n) => `cat ${nest(n, '<(cat ', 'src/app.ts', ')')}`,
  'output process substitution': (n) => `ls ${nest(n, '>(cat ', '', ')')}`,
  'parameter expansion': (n) => `echo ${nest(n, '${x:-', 'y', '}')}`,
  'test expression': (n) => `[[ ${nest(n, '( ', '-n x', ' )')} ]]`,
  if: (n) => nest(n, 'if true; then ', 'ls; ', 'fi; ').replace(/; $/, ''),
  while: (n) => nest(n, 'while false; do ', 'ls; ', 'done; ').replace(/; $/, ''),
  for: (n) => nest(n, 'for i in a; do ', 'ls; ', 'done; ').replace(/; $/, ''),
  case: (n) => nest(n, 'case x in x) ', 'ls ', ';; esac '),
  function: (n) => nest(n, 'f() { ', 'ls; ', '}; ').replace(/; $/, ''),
  array: (n) => `a=( ${nest(n, '$(echo ', 'x', ')')} )`,
  'here-document in substitution': (n) => nest(n, 'cat <<E\n$(', 'ls', ')\nE\n'),
  'and-chain': (n) => Array.from({ length: n }, () => 'ls').join(' && '),
  pipeline: (n) => Array.from({ length: n }, () => 'cat').join(' | '),
  'bash -c': (n) => {
    let s = 'ls';
    for (let i = 0; i < n && s.length <= 4 * SHELL_LIMITS.chars; i++) s = `bash -c ${JSON.stringify(s)}`;
    return s;
  },
  eval: (n) => nest(n, 'eval ', 'ls', ''),
};

/** Flat text that is only very large. */
const LARGE: Record<string, string> = {
  'a long word': `echo ${'a'.repeat(SHELL_LIMITS.chars - 10)}`,
  'a word past the size limit': `echo ${'a'.repeat(SHELL_LIMITS.chars + 1)}`,
  'many arguments': `echo ${Array.from({ length: 15_000 }, (_, i) => `a${i}`).join(' ')}`,
  'many statements': Array.from({ length: 9_000 }, () => 'ls').join('; '),
  'many redirections': `echo x ${Array.from({ length: 5_000 }, (_, i) => `>o${i}`).join(' ')}`,
  'a long here-document': `cat <<'EOF' > notes.txt\n${'line of text\n'.repeat(7_000)}EOF\n`,
  'many here-documents': Array.from({ length: 2_000 }, (_, i) => `cat <<E${i}\nx\nE${i}`).join('\n'),
  'an unclosed substitution': `echo ${'$('.repeat(20_000)}`,
  'unbalanced closers': `echo ${')'.repeat(20_000)}`,
  'a long run of quotes': `echo ${'"'.repeat(30_001)}`,
};

/** A small deterministic PRNG, so a failing mixture can be printed and run again. */
function rng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const WRAPS: ((x: string) => string)[] = [
  (x) => `$(${x})`,
  (x) => `"$(${x})"`,
  (x) => `( ${x} )`,
  (x) => `{ ${x}; }`,
  (x) => `<(${x})`,
  (x) => `$(( $(${x}) + 1 ))`,
  (x) => `if ${x}; then ls; fi`,
  (x) => `${x} && ls`,
  (x) => `${x} | cat`,
  (x) => `echo \${v:-$(${x})}`,
  (x) => `bash -c '${x.replace(/'/g, '')}'`,
  (x) => `cat <<E\n$(${x})\nE\n`,
];

function mixture(seed: number): string {
  const r = rng(seed);
  const depth = Math.floor(r() ** 2 * 400);
  let s = ['ls', 'id', 'curl x', 'rm -rf /', 'cat .env', 'echo hi'][Math.floor(r() * 6)]!;
  for (let i = 0; i < depth && s.length < SHELL_LIMITS.chars * 2; i++) {
    const w = WRAPS[Math.floor(r() * WRAPS.length)]!(s);
    s = w.startsWith('$') || w.startsWith('"') || w.startsWith('<') ? `echo ${w}` : w;
  }
  return s;
}

async function expectDecision(command: string) {
  const started = performance.now();
  const d = await judge(command);
  expect(['allow', 'deny', 'ask']).toContain(d.decision);
  expect(d.reason.length).toBeGreaterThan(0);
  const json = await checkJson(command);
  expect(JSON.parse(json)).toMatchObject({ decision: d.decision });
  // the explanation grows with the command, not with its square
  expect(json.length).toBeLessThan(200_000 + 40 * command.length);
  // generous for a loaded machine: 20,000 stray ')' alone took 51 s before the parse had a time limit
  expect(performance.now() - started).toBeLessThan(30_000);
  return d;
}

describe('the judge under hostile shell text', () => {
  it('refuses a 6,000-character nest of $(…) with a reason, in a line of output (it overflowed the stack)', async () => {
    const command = `echo ${nest(2_000, '$(', 'x', ')')}`;
    expect(command.length).toBeGreaterThanOrEqual(6_000);
    const json = await checkJson(command);
    const d = JSON.parse(json) as { decision: string; rule: string; reason: string; explain: string[] };
    expect(d).toMatchObject({ decision: 'deny', rule: 'command.too-complex' });
    expect(d.reason).toMatch(/nests more than \d+ levels/);
    expect(json.length).toBeLessThan(2_000);
    // the control: nested substitutions as a person writes them are judged as before
    expect((await judge('echo "$(basename "$(dirname "$(pwd)")")"')).decision).toBe('allow');
    expect((await judge(`echo ${nest(20, '$(echo ', 'x', ')')}`)).decision).toBe('allow');
  });

  it('refuses 500 levels without printing megabytes of explanation (the explanation was quadratic)', async () => {
    const json = await checkJson(`echo ${nest(500, '$(', 'x', ')')}`);
    expect(json.length).toBeLessThan(2_000);
  });

  for (const [name, make] of Object.entries(NESTED)) {
    it(`answers ${name} at every depth with a decision, and refuses the deepest`, async () => {
      const verdicts: string[] = [];
      for (const n of [1, 5, 30, 60, 200, 1_000, 5_000]) {
        const command = make(n);
        verdicts.push((await expectDecision(command)).decision);
      }
      expect(verdicts.length).toBeGreaterThan(2);
      // whatever the shallow ones got, past the limits nothing is allowed
      expect(verdicts[verdicts.length - 1]).not.toBe('allow');
    });
  }

  for (const [name, command] of Object.entries(LARGE)) {
    it(`answers ${name} with a decision`, async () => {
      await expectDecision(command);
    });
  }

  it('answers 150 random mixtures of nested constructs with a decision', async () => {
    const seen = new Set<string>();
    for (let seed = 1; seed <= 150; seed++) {
      const command = mixture(seed);
      try {
        seen.add((await expectDecision(command)).decision);
      } catch (e) {
        throw new Error(`mixture seed ${seed} (${command.length} chars): ${(e as Error).message}`, { cause: e });
      }
    }
    expect(seen.has('deny')).toBe(true);
  });

  it('still judges plain commands after all of the above: the parser is not left broken', async () => {
    expect((await judge('ls src')).decision).toBe('allow');
    expect((await judge('cat .env')).decision).toBe('deny');
  });

  it('a text at the size limit is judged; one character over is refused with the size named', async () => {
    const at = `echo ${'a'.repeat(SHELL_LIMITS.chars - 5)}`;
    expect(at.length).toBe(SHELL_LIMITS.chars);
    expect((await judge(at)).decision).toBe('allow');
    const over = await judge(`${at}a`);
    expect(over).toMatchObject({ decision: 'deny', rule: 'command.too-complex' });
    expect(over.reason).toContain(`more than ${SHELL_LIMITS.chars}`);
  });
});
