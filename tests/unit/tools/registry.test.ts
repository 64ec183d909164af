import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { afterAll, describe, expect, it } from 'vitest';
import { evaluate } from '../../../src/tools/evaluate.js';
import {
  ATTEMPT_ENDING_TOOLS,
  COMMAND_TOOLS,
  EDIT_TOOLS,
  READ_ONLY_TOOLS,
  REFLECTION_TOOLS,
  TOOL_CATALOG,
  TOOL_NAMES,
  isToolName,
} from '../../../src/tools/catalog.js';
import { describeCall } from '../../../src/tools/dispatch.js';
import { TOOLS } from '../../../src/tools/registry.js';
import { parseToolInput } from '../../../src/tools/schemas.js';
import { tempRepo } from '../policy/helpers.js';

const repo = tempRepo();
repo.file('README.md', '# hi\n');
afterAll(() => repo.cleanup());

describe('the policy finds each tool by name in the registry', () => {
  it('denies a name that is no tool, including names every object has', async () => {
    for (const name of ['write_file', 'constructor', '__proto__', 'toString', 'hasOwnProperty', '']) {
      const d = await evaluate(name, { path: 'README.md' }, repo.ctx());
      expect(d, name).toMatchObject({ decision: 'deny', rule: 'tool.unknown' });
      expect(d.reason).toContain('read_file, list_files, search, edit, create_file, run_command, update_plan, reflect, finish');
    }
    // the control: the same input to a real tool is allowed
    expect((await evaluate('read_file', { path: 'README.md' }, repo.ctx())).decision).toBe('allow');
  });

  it('judges each tool by its own rule, never by another tool’s', async () => {
    const ctx = repo.ctx();
    const rule = async (tool: string, input: unknown) => (await evaluate(tool, input, ctx)).rule;
    expect(await rule('list_files', {})).toBe('tool.list');
    expect(await rule('search', { pattern: 'x' })).toBe('tool.search');
    expect(await rule('update_plan', { steps: [] })).toBe('tool.plan');
    expect(await rule('reflect', {})).toBe('tool.reflect');
    expect(await rule('finish', { summary: 'done' })).toBe('tool.finish');
    // a bad input is refused naming the tool that was called (the old fall-through named finish)
    const plan = await evaluate('update_plan', { summary: 'x' }, ctx);
    expect(plan).toMatchObject({ decision: 'deny', rule: 'input.invalid' });
    expect(plan.reason).toMatch(/^update_plan /);
  });

  it('reports safe-to-repeat only for tools whose policy judges it', async () => {
    const ctx = repo.ctx();
    expect(await evaluate('read_file', { path: 'README.md' }, ctx)).not.toHaveProperty('safeToRepeat');
    expect((await evaluate('run_command', { command: 'ls' }, ctx)).safeToRepeat).toBe(true);
    expect((await evaluate('run_command', { command: 'touch a.txt' }, ctx)).safeToRepeat).toBe(false);
    expect((await evaluate('run_command', {}, ctx)).safeToRepeat).toBe(false);
  });
});

describe('the line that names a call in logs and the Web UI', () => {
  const line = (name: string, input: unknown) => {
    const p = parseToolInput(name, input);
    if (!p.ok) throw new Error(p.error);
    return describeCall(p);
  };

  it('names the tool and what it acts on, cut to stay short', () => {
    expect(line('read_file', { path: 'src/a.ts' })).toBe('read_file src/a.ts');
    expect(line('read_file', { path: 'src/a.ts', start_line: 10 })).toBe('read_file src/a.ts:10-');
    expect(line('read_file', { path: 'src/a.ts', start_line: 10, end_line: 20 })).toBe('read_file src/a.ts:10-20');
    expect(line('list_files', {})).toBe('list_files');
    expect(line('list_files', { glob: '*.md' })).toBe('list_files *.md');
    expect(line('search', { pattern: 'x'.repeat(80), path_glob: 'src/**' })).toBe(`search "${'x'.repeat(60)}" in src/**`);
    expect(line('edit', { path: 'a.ts', old_string: 'a', new_string: 'b' })).toBe('edit a.ts');
    expect(line('create_file', { path: 'b.ts', content: '' })).toBe('create_file b.ts');
    expect(line('run_command', { command: 'y'.repeat(200), reason: 'r' })).toBe(`run_command: ${'y'.repeat(160)}`);
    expect(line('update_plan', { steps: [{ step: 'a', status: 'done' }] })).toBe('update_plan (1 steps)');
    const reflection = { attempt: 2, last_failure: 'f', last_cause: 'c', this_fix: 'x', rationale: 'r', changed_files: [] };
    expect(line('reflect', reflection)).toBe('reflect (attempt 2)');
    expect(line('finish', { summary: 'done:\nall checks pass' })).toBe('finish: done: all checks pass');
  });
});

describe('the catalog', () => {
  it('names the tools the model is shown, in order, each with a spec', () => {
    expect(TOOL_NAMES).toEqual(['read_file', 'list_files', 'search', 'edit', 'create_file', 'run_command', 'update_plan', 'reflect', 'finish']);
    expect(Object.keys(TOOLS)).toEqual([...TOOL_NAMES]);
    for (const name of TOOL_NAMES) expect(typeof TOOLS[name].judge, name).toBe('function');
  });

  it('gives the workflow the same sets it hard-coded before', () => {
    expect([...READ_ONLY_TOOLS].sort()).toEqual(['list_files', 'read_file', 'search', 'update_plan']);
    expect([...EDIT_TOOLS].sort()).toEqual(['create_file', 'edit']);
    expect([...COMMAND_TOOLS]).toEqual(['run_command']);
    expect([...REFLECTION_TOOLS]).toEqual(['reflect']);
    expect([...ATTEMPT_ENDING_TOOLS]).toEqual(['finish']);
    expect(READ_ONLY_TOOLS.has('constructor')).toBe(false);
    expect(isToolName('__proto__')).toBe(false);
    expect(isToolName('finish')).toBe(true);
    expect(TOOL_CATALOG.run_command.safeToRepeat).toBe('judged');
  });
});

describe('a tool left half-added does not compile', () => {
  const src = (p: string) => fileURLToPath(new URL(`../../../src/${p}`, import.meta.url));
  const dir = mkdtempSync(join(tmpdir(), 'kiln-registry-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const files = {
    complete: `import { TOOLS, type ToolRegistry } from ${JSON.stringify(src('tools/registry.js'))};\nexport const r: ToolRegistry = TOOLS;\n`,
    missingTool: `import { TOOLS, type ToolRegistry } from ${JSON.stringify(src('tools/registry.js'))};\nconst { reflect: _gone, ...rest } = TOOLS;\nexport const r: ToolRegistry = rest;\n`,
    missingJudge:
      `import { defineTool } from ${JSON.stringify(src('tools/spec.js'))};\nimport { finishInput } from ${JSON.stringify(src('tools/finish.js'))};\n` +
      `export const t = defineTool({ schema: finishInput, run: (h) => h.record('x', { summary: 'x' }), summary: (v) => v.summary });\n`,
    unlisted: `import { TOOLS, type ToolRegistry } from ${JSON.stringify(src('tools/registry.js'))};\nexport const r = { ...TOOLS, delete_repo: TOOLS.finish } satisfies ToolRegistry;\n`,
  };
  const paths = Object.fromEntries(Object.keys(files).map((k) => [k, join(dir, `${k}.mts`)]));
  for (const [k, text] of Object.entries(files)) writeFileSync(paths[k]!, text);

  const config = ts.getParsedCommandLineOfConfigFile(
    fileURLToPath(new URL('../../../tsconfig.json', import.meta.url)),
    {},
    { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} },
  )!;
  const program = ts.createProgram(Object.values(paths), { ...config.options, noEmit: true, rootDir: undefined });
  const errors = (k: string) =>
    ts.getPreEmitDiagnostics(program, program.getSourceFile(paths[k]!)).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));

  it('compiles when every catalog name has a spec with a judge (the control)', () => {
    expect(errors('complete')).toEqual([]);
  });

  it('fails when a catalog name has no spec', () => {
    expect(errors('missingTool').join('\n')).toMatch(/Property 'reflect' is missing/);
  });

  it('fails when a spec names no catalog tool', () => {
    expect(errors('unlisted').join('\n')).toMatch(/'delete_repo' does not exist in type 'ToolRegistry'/);
  });

  it('fails when a spec has no policy judgement', () => {
    expect(errors('missingJudge').join('\n')).toMatch(/Property 'judge' is missing/);
  });
});
