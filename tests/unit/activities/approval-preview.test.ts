/**
 * The diff an edit or a new file would make, shown to the person who approves it: as the edit
 * would make it, redacted, bounded, and never read from outside the worktree.
 */
import * as diffLib from 'diff';
import { mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { approvalPreview, PREVIEW_MAX_CHARS, PREVIEW_MAX_LINES } from '../../../src/activities/approval-preview.js';
import { parseToolInput, type ParsedToolInput } from '../../../src/tools/schemas.js';
import { preparedRun } from '../../helpers/prepared-run.js';

const TOKEN = 'ghp_' + 'Q'.repeat(36);

function parsed(name: string, input: unknown): ParsedToolInput {
  const p = parseToolInput(name, input);
  if (!p.ok) throw new Error(p.error);
  return p;
}

function workspace(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'kiln-preview-'));
  for (const [f, text] of Object.entries(files)) writeFileSync(join(dir, f), text);
  return dir;
}

describe('approvalPreview', () => {
  it('an edit shows the lines it replaces and their context, with line numbers of the file', () => {
    const ws = workspace({ 'a.ts': ['one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight'].join('\n') + '\n' });
    const preview = approvalPreview(ws, parsed('edit', { path: 'a.ts', old_string: 'six', new_string: 'SIX' }))!;
    expect(preview.split('\n')).toEqual(['--- a.ts', '+++ a.ts', '@@ -3,6 +3,6 @@', ' three', ' four', ' five', '-six', '+SIX', ' seven', ' eight']);
  });

  it('a new file shows every line added; a create_file over an existing file (which it refuses) shows nothing', () => {
    const ws = workspace({ 'old.txt': 'before\n' });
    expect(approvalPreview(ws, parsed('create_file', { path: 'new.md', content: 'a\nb\n' }))).toBe('--- new.md\tnew file\n+++ new.md\n@@ -0,0 +1,2 @@\n+a\n+b');
    expect(approvalPreview(ws, parsed('create_file', { path: 'old.txt', content: 'after\n' }))).toBeUndefined();
  });

  it('attack: a secret in the new text is redacted in the preview', () => {
    const ws = workspace({ 'cfg.ts': 'export const token = "";\n' });
    const preview = approvalPreview(ws, parsed('edit', { path: 'cfg.ts', old_string: '""', new_string: `"${TOKEN}"` }))!;
    expect(preview).not.toContain(TOKEN);
    expect(preview).toContain('+export const token =');
  });

  it('a new file reads as the diff tool writes it, with or without a last newline', () => {
    const ws = workspace({});
    const { createPatch } = diffLib;
    for (const content of ['a\nb\n', 'a\nb', 'one line', '\n', 'x\n\n']) {
      const expected = createPatch('n.txt', '', content, 'new file', '', { context: 3 }).split('\n').slice(2).join('\n').replace(/\n$/, '');
      expect(approvalPreview(ws, parsed('create_file', { path: 'n.txt', content })), JSON.stringify(content)).toBe(expected);
    }
  });

  it('a change too large to diff in time says so instead of holding the activity', () => {
    const content = Array.from({ length: 50_000 }, (_, i) => `line ${i}`).join('\n') + '\n';
    const ws = workspace({ 'big.txt': content });
    const t = performance.now();
    // every line changes: 100,000 edits for the diff to find
    const preview = approvalPreview(ws, parsed('edit', { path: 'big.txt', old_string: content, new_string: content.replace(/line/g, 'LINE') }));
    expect(performance.now() - t).toBeLessThan(3000);
    expect(preview).toBe('big.txt: too large a change to preview (50000 lines before, 50000 after)');
  });

  it('a large file is bounded: at most PREVIEW_MAX_LINES lines and PREVIEW_MAX_CHARS characters, saying how much was left out', () => {
    const ws = workspace({});
    const content = Array.from({ length: 5000 }, (_, i) => `line ${i} ${'x'.repeat(i % 7 === 0 ? 2000 : 10)}`).join('\n') + '\n';
    const preview = approvalPreview(ws, parsed('create_file', { path: 'big.txt', content }))!;
    const lines = preview.split('\n');
    expect(lines.length).toBeLessThanOrEqual(PREVIEW_MAX_LINES + 1);
    expect(preview.length).toBeLessThanOrEqual(PREVIEW_MAX_CHARS + 100);
    expect(lines.at(-1)).toMatch(/^… \d+ more lines of the diff not shown$/);
    expect(preview).toContain('more characters)');
  });

  it('attack: an edit through a symlink to a file outside the worktree, or a path outside it, shows nothing of that file', () => {
    const outside = workspace({ 'secret.txt': 'outside-content\n' });
    const ws = workspace({});
    symlinkSync(join(outside, 'secret.txt'), join(ws, 'link.txt'));
    expect(approvalPreview(ws, parsed('edit', { path: 'link.txt', old_string: 'outside', new_string: 'x' }))).toBeUndefined();
    expect(approvalPreview(ws, parsed('edit', { path: join(outside, 'secret.txt'), old_string: 'outside', new_string: 'x' }))).toBeUndefined();
    expect(
      approvalPreview(ws, parsed('edit', { path: '../' + outside.split('/').at(-1) + '/secret.txt', old_string: 'outside', new_string: 'x' })),
    ).toBeUndefined();
  });

  it('control: other tools, and an edit whose old text is not in the file, have no preview', () => {
    const ws = workspace({ 'a.txt': 'alpha\n' });
    expect(approvalPreview(ws, parsed('run_command', { command: 'ls', reason: 'x' }))).toBeUndefined();
    expect(approvalPreview(ws, parsed('edit', { path: 'a.txt', old_string: 'gamma', new_string: 'x' }))).toBeUndefined();
  });
});

describe('runTool: an edit the policy asks about carries its preview into the pending approval', () => {
  it('the ask result has the diff; a command that asks has none', async () => {
    const { call } = await preparedRun({
      'a.txt': 'alpha\n',
      '.kiln/policy.json': JSON.stringify({ approvals: { twoPerson: ['tool:edit', 'command:mytool*'] } }),
    });
    const edit = await call('toolu_1', 'edit', { path: 'a.txt', old_string: 'alpha', new_string: 'beta' });
    expect(edit).toMatchObject({ status: 'ask', preview: '--- a.txt\n+++ a.txt\n@@ -1,1 +1,1 @@\n-alpha\n+beta' });
    const cmd = await call('toolu_2', 'run_command', { command: 'mytool lint', reason: 'x' });
    expect(cmd.status).toBe('ask');
    expect(cmd).not.toHaveProperty('preview');
  });
});
