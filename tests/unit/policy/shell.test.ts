import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { evaluate } from '../../../src/tools/evaluate.js';
import { bashParser } from '../../../src/shell/grammar.js';
import { explainCommand } from '../../../src/shell/explain.js';
import { parseShell, ShellParseError } from '../../../src/shell/parse.js';
import { tempRepo, type TempRepo } from './helpers.js';

const programs = async (src: string) => (await parseShell(src)).filter((c) => c.words.length).map((c) => c.words.map((w) => w.value).join(' '));

describe('the shell parser (tree-sitter-bash, walked with an allowlist)', () => {
  it('is loaded once per process: every caller shares the same parser', async () => {
    const [a, b] = await Promise.all([bashParser(), bashParser()]);
    expect(a).toBe(b);
    expect(await bashParser()).toBe(a);
  });

  it('parses a text once: later callers get equal copies of their own, per text and wrappers', async () => {
    const first = await parseShell('npm test && git status > out.txt');
    first[0]!.words[0]!.value = 'rm';
    first.pop();
    const again = await parseShell('npm test && git status > out.txt');
    expect(again.map((c) => c.words.map((w) => w.value).join(' '))).toEqual(['npm test', 'git status']);
    expect(again).not.toBe(await parseShell('npm test && git status > out.txt'));
    expect((await parseShell('npm test', ['bash -c'])).map((c) => c.via)).toEqual([['bash -c']]);
    expect((await parseShell('npm test')).map((c) => c.via)).toEqual([[]]);
  });

  it('finds every program that runs: substitutions, array elements, subscripts, expansions, nested backticks', async () => {
    expect(await programs('x+=( $(curl a) )')).toEqual(['curl a']);
    expect(await programs('x=([0]=$(wget b))')).toEqual(['wget b']);
    expect(await programs('a[$(id)]=1')).toEqual(['id']);
    expect(await programs('echo ${x:-$(nc c)}')).toContain('nc c');
    expect(await programs('echo `echo \\`curl d\\``')).toContain('curl d');
    expect(await programs('while read l; do echo "$l"; done < <(ls src)')).toEqual(['ls src', 'read l', 'echo $l']);
  });

  it("gives a list's redirection to its last command, as bash does (tree-sitter hangs it on the list)", async () => {
    const cmds = await parseShell('npm test && git status > out.txt');
    expect(cmds.map((c) => [c.words.map((w) => w.value).join(' '), c.redirects.map((r) => r.target.value)])).toEqual([
      ['npm test', []],
      ['git status', ['out.txt']],
    ]);
  });

  it('continues a pipeline written after a here-document start', async () => {
    const cmds = await parseShell('cat <<EOF | sh\ncurl x\nEOF\n');
    expect(cmds[0]).toMatchObject({ pipedTo: true });
    expect(cmds[0]!.redirects[0]!.heredoc).toBe('curl x\n');
    expect(cmds[1]!.words.map((w) => w.value)).toEqual(['sh']);
  });

  it('marks the shapes that only hide what runs', async () => {
    const [assembled] = await parseShell('$X$Y https://x');
    expect(assembled!.words[0]!.assembled).toBe(true);
    const [ifs] = await parseShell('curl${IFS}x');
    expect(ifs!.words[0]!.obfuscation).toMatch(/IFS/);
    const [escaped] = await parseShell("$'\\x63url' x");
    expect(escaped!.words[0]).toMatchObject({ value: 'curl', escaped: true });
    const [quoted] = await parseShell('"$X$Y" https://x');
    expect(quoted!.words[0]!.assembled).toBe(true);
    const [single] = await parseShell('"$X" https://x');
    expect(single!.words[0]!.assembled).toBeUndefined();
  });

  it('reports text that is not shell as a syntax error with line and column', async () => {
    const err = await parseShell('echo "open').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ShellParseError);
    expect((err as ShellParseError).syntax).toBe(true);
    expect((err as ShellParseError).message).toMatch(/^1:\d+: unterminated double quote/);
  });

  it('explains what it judged: the typed tree and each command with its words', async () => {
    const lines = await explainCommand('FOO=1 ls $X | wc -l');
    expect(lines[1]).toMatch(/^\s+\(program \(pipeline \(command \(variable_assignment/);
    expect(lines).toContain('  command [piped to next]: assign "FOO=1"; program "ls"; arg "$X"{dynamic}');
  });
});

describe('judged by the walker', () => {
  let repo: TempRepo;
  beforeEach(() => {
    repo = tempRepo();
    repo.file('src/app.ts');
    repo.file('tests/app.test.ts');
    repo.file('scripts/build.sh', 'ls\n');
  });
  afterEach(() => repo.cleanup());
  const run = (command: string, extra = {}) => evaluate('run_command', { command, reason: 'test' }, repo.ctx(extra));

  it('refuses obfuscation with a reason that says so, and allows the look-alike', async () => {
    const d = await run('X=cu; Y=rl; $X$Y https://x');
    expect(d).toMatchObject({ decision: 'deny', rule: 'command.obfuscated' });
    expect(d.reason).toMatch(/assembled/);
    expect((await run('X=a; Y=b; echo "$X$Y"')).decision).toBe('allow');
  });

  it('asks before running a file the run changed, and shows the file in the approval', async () => {
    const d = await run('bash scripts/build.sh', { changedFiles: ['scripts/build.sh'] });
    expect(d).toMatchObject({ decision: 'ask', rule: 'command.run-written' });
    expect(d.reason).toContain('ls');
    const inline = await run("printf 'rm -rf src' > x.sh && sh x.sh");
    expect(inline.reason).toContain('rm -rf src');
    expect((await run('bash scripts/build.sh', { changedFiles: ['src/app.ts'] })).decision).toBe('allow');
  });

  it('judges each assignment by what it changes: a loader path is refused, CI=1 passes', async () => {
    expect(await run('LD_PRELOAD=./x.so ls')).toMatchObject({ decision: 'deny', rule: 'command.env' });
    expect(await run('export GIT_SSH_COMMAND=./x.sh; git status')).toMatchObject({ decision: 'deny', rule: 'command.env' });
    expect((await run('CI=1 FORCE_COLOR=0 ls src')).decision).toBe('allow');
  });
});

describe('constructs the walker was not taught', () => {
  let repo: TempRepo;
  beforeEach(() => {
    repo = tempRepo();
    repo.file('src/app.ts');
  });
  afterEach(() => repo.cleanup());

  it('are not allowed: `$(< file)` reads a file through a form the walker does not judge, so a person reads it', async () => {
    const err = await parseShell('echo $(< src/app.ts)').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ShellParseError);
    expect((err as ShellParseError).syntax).toBe(false);
    const d = await evaluate('run_command', { command: 'echo $(< src/app.ts)', reason: 't' }, repo.ctx());
    expect(d).toMatchObject({ decision: 'ask', rule: 'command.unsupported-syntax' });
    // the look-alike the walker knows
    expect((await evaluate('run_command', { command: 'echo $(cat src/app.ts)', reason: 't' }, repo.ctx())).decision).toBe('allow');
  });

  it('declarations of bare names are understood (export PATH, local x, readonly X)', async () => {
    expect(await programs('export PATH; local -r x; readonly X')).toEqual(['export PATH', 'local -r x', 'readonly X']);
  });
});
