import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { evaluate } from '../../../src/tools/evaluate.js';
import { tempRepo, type TempRepo } from './helpers.js';

let repo: TempRepo;
beforeEach(() => {
  repo = tempRepo();
  repo.file('src/app.ts');
  repo.file('.env', 'SECRET=1\n');
});
afterEach(() => repo.cleanup());

const run = (command: string, extra = {}) => evaluate('run_command', { command, reason: 'test' }, repo.ctx(extra));

describe('run_command decisions', () => {
  it('lists every segment, with the wrappers it came through', async () => {
    const d = await run(`timeout 30 env CI=1 npm test && bash -c 'git status | head -3' > out.txt`);
    expect(d.decision).toBe('allow');
    expect(d.segments?.map((s) => s.argv)).toEqual([
      ['npm', 'test'],
      ['git', 'status'],
      ['head', '-3'],
      ['bash', '-c', 'git status | head -3'],
    ]);
    expect(d.segments?.[0]?.via).toEqual(['timeout', 'env']);
    expect(d.segments?.[1]?.via).toEqual(['bash -c']);
    expect(d.segments?.[3]?.redirects).toEqual(['> out.txt']);
  });

  it('takes the most severe segment, with its rule and reason', async () => {
    const d = await run('ls && npm install && curl https://x');
    expect(d).toMatchObject({ decision: 'deny', rule: 'command.network' });
    expect(d.reason).toMatch(/curl/);
    expect(d.safeToRepeat).toBe(false);
  });

  it('sees commands inside $(...), backticks, heredocs piped to sh, and nested shells', async () => {
    expect((await run('echo "$(cat .env)"')).rule).toBe('command.sensitive-path');
    expect((await run('echo `wget x`')).rule).toBe('command.network');
    expect((await run('cat <<EOF | sh\ncurl x\nEOF')).rule).toBe('command.network');
    expect((await run(`sh -c "bash -c 'git push'"`)).rule).toBe('command.git-remote');
  });

  it('does not treat words inside quoted arguments as commands', async () => {
    expect((await run('git commit -m "curl x; rm -rf /"')).decision).toBe('allow');
    expect((await run("grep -rn 'wget ' src")).decision).toBe('allow');
  });

  it("denies what does not parse, with the parser's message", async () => {
    const d = await run('echo "unterminated');
    expect(d).toMatchObject({ decision: 'deny', rule: 'command.parse-error' });
    expect(d.reason).toMatch(/quote/);
  });

  it('hashes the parsed command: whitespace does not matter, arguments and redirects do', async () => {
    const a = await run('npm   install  left-pad');
    const b = await run(' npm install left-pad ');
    const c = await run('npm install right-pad');
    expect(a.hash).toMatch(/^[0-9a-f]{64}$/);
    expect(a.hash).toBe(b.hash);
    expect(a.hash).not.toBe(c.hash);
    expect((await run('echo x > a.txt')).hash).not.toBe((await run('echo x > b.txt')).hash);
  });

  it('gives asks a grant key of program and subcommand', async () => {
    expect(await run('npm install left-pad')).toMatchObject({ decision: 'ask', rule: 'command.install', grantKey: 'run_command:npm install' });
    expect(await run('pip install requests')).toMatchObject({ grantKey: 'run_command:pip install' });
  });

  it('marks read-only commands and checks safe to repeat, writes not', async () => {
    expect((await run('git diff && cat src/app.ts')).safeToRepeat).toBe(true);
    expect(await run('npm run typecheck', { checks: ['npm run typecheck'] })).toMatchObject({ decision: 'allow', rule: 'command.check', safeToRepeat: true });
    expect((await run('touch src/b.ts')).safeToRepeat).toBe(false);
    expect((await run('echo x > src/b.ts')).safeToRepeat).toBe(false);
  });

  it('a reader that writes is said to write, and is not safe to repeat', async () => {
    // the reason a person reads names the write, not "sort only reads"
    expect(await run('sort -o out.txt src/app.ts')).toMatchObject({ decision: 'allow', rule: 'write.allowed', safeToRepeat: false });
    expect((await run('sort -o out.txt src/app.ts')).reason).toMatch(/out\.txt/);
    expect(await run('echo x > src/b.ts')).toMatchObject({ rule: 'write.allowed' });
    // writes with no option naming the file: a magic file compiled into the current directory, an
    // output file as xxd's second argument, yq's in-place edit
    for (const command of ['file -C -m src/app.ts', 'xxd src/app.ts out.hex', 'yq -i .a=1 src/app.ts', 'yq -iP .a=1 src/app.ts']) {
      expect(await run(command), command).toMatchObject({ decision: 'allow', rule: 'command.worktree', safeToRepeat: false });
    }
    expect(await run('xxd src/app.ts .env')).toMatchObject({ decision: 'deny', rule: 'path.sensitive' });
    // control: the same programs reading
    for (const command of ['sort src/app.ts', 'file src/app.ts', 'xxd -l 16 src/app.ts', 'yq .a src/app.ts', 'tree -L 2', 'less src/app.ts']) {
      expect(await run(command), command).toMatchObject({ decision: 'allow', rule: 'command.readonly', safeToRepeat: true });
    }
  });

  it('auto mode turns asks into denies under the same rule; strict asks for anything not read-only', async () => {
    const auto = await run('npm install', { mode: 'auto' });
    expect(auto).toMatchObject({ decision: 'deny', rule: 'command.install' });
    expect(auto.reason).toMatch(/^auto mode: would ask/);
    expect(auto.grantKey).toBeUndefined();
    expect(await run('touch src/b.ts', { mode: 'strict' })).toMatchObject({ decision: 'ask', rule: 'command.strict' });
    expect(await run('git log -n 3', { mode: 'strict' })).toMatchObject({ decision: 'allow' });
  });

  it('applies user rules: deny first, hard denies stay, then allow', async () => {
    const config = (commands: object) => ({ config: { ...repo.ctx().config, commands: { allow: [], ask: [], deny: [], ...commands } } });
    expect(await run('git commit -m x', config({ deny: ['git commit'] }))).toMatchObject({ decision: 'deny', rule: 'command.user-deny' });
    expect(await run('curl x', config({ allow: ['curl'] }))).toMatchObject({ decision: 'deny', rule: 'command.network' });
    expect(await run('make test', config({ allow: ['make test'] }))).toMatchObject({ decision: 'allow', rule: 'command.user-allow' });
    expect(await run('make build', config({ allow: ['make test'] }))).toMatchObject({ decision: 'ask' });
  });

  it('tracks cd: relative paths after it resolve from the new directory', async () => {
    expect((await run('cd src && cat app.ts')).decision).toBe('allow');
    expect(await run('cd / && rm -rf *')).toMatchObject({ decision: 'deny' });
    expect(await run('cd .. && cat secrets.txt')).toMatchObject({ decision: 'ask' });
  });

  it('expands globs against the disk: a glob that reaches a secret is denied', async () => {
    expect(await run('cat .e*')).toMatchObject({ decision: 'deny', rule: 'command.sensitive-path' });
    expect(await run('cat src/*.ts')).toMatchObject({ decision: 'allow' });
  });
});

describe('file tools', () => {
  it('asks for package.json changes that add install scripts and allows others', async () => {
    repo.file('package.json', '{"name":"x","scripts":{"test":"vitest run"}}\n');
    const ctx = repo.ctx();
    const edit = (old_string: string, new_string: string) => evaluate('edit', { path: 'package.json', old_string, new_string }, ctx);
    expect(await edit('"test":"vitest run"', '"test":"vitest run","postinstall":"node x"')).toMatchObject({
      decision: 'ask',
      rule: 'write.lifecycle-script',
      grantKey: 'edit:package.json',
    });
    expect(await edit('"name":"x"', '"name":"y"')).toMatchObject({ decision: 'allow' });
  });

  it('denies protected files unless the run allows them, but never git internals', async () => {
    const ctx = repo.ctx();
    expect(await evaluate('edit', { path: 'src/app.test.ts', old_string: 'a', new_string: 'b' }, ctx)).toMatchObject({
      decision: 'deny',
      rule: 'write.protected',
    });
    expect(await evaluate('edit', { path: 'src/app.test.ts', old_string: 'a', new_string: 'b' }, { ...ctx, allowProtectedWrites: true })).toMatchObject({
      decision: 'allow',
    });
    expect(await evaluate('create_file', { path: '.git/HEAD', content: 'x' }, { ...ctx, allowProtectedWrites: true })).toMatchObject({
      decision: 'deny',
      rule: 'write.git-internals',
    });
  });

  it('fails closed on unknown tools and bad input, saying what to do', async () => {
    const ctx = repo.ctx();
    expect(await evaluate('rm_rf', {}, ctx)).toMatchObject({ decision: 'deny', rule: 'tool.unknown' });
    expect(await evaluate('read_file', 'src/app.ts', ctx)).toMatchObject({ decision: 'deny', rule: 'input.invalid' });
    const d = await evaluate('read_file', {}, ctx);
    expect(d.reason).toMatch(/"path"/);
  });
});
