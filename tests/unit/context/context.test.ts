import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildContext, buildNaiveContext } from '../../../src/context/build.js';
import { currentDiff } from '../../../src/context/diff.js';
import { extractKeywords } from '../../../src/context/keywords.js';
import { packByPriority, type ContextItem } from '../../../src/context/pack.js';
import { rankFiles } from '../../../src/context/rank.js';
import { findRuleFiles, readProjectRules } from '../../../src/context/rules.js';
import { relevantSnippets } from '../../../src/context/snippets.js';
import { estimateTokens } from '../../../src/shared/tokens.js';
import { removeTemp, tempRepo } from '../tools/fixture.js';

let ws: string;
let parent: string;

const filler = (name: string, n: number) => Array.from({ length: n }, (_, i) => `// ${name} helper ${i}\nexport const ${name}${i} = ${i};`).join('\n') + '\n';

beforeAll(() => {
  ({ dir: ws, parent } = tempRepo({
    'AGENTS.md': 'Root rule: use pnpm. Indent with 2 spaces.\n',
    'CLAUDE.md': 'Root claude rule.\n',
    'src/api/AGENTS.md': 'API rule: indent with 4 spaces here.\n',
    'src/api/.kiln/rules.md': 'Kiln rule for the API.\n',
    'src/web/AGENTS.md': 'Web rule, not on the path.\n',
    'src/api/session.ts': [
      filler('misc', 20),
      'export function refreshSession(token: string) {',
      '  if (isExpired(token)) throw new SessionExpiredError();',
      '  return rotate(token);',
      '}',
      filler('more', 20),
    ].join('\n'),
    'src/api/expiry.ts': 'export function isExpired(token: string) {\n  return decode(token).exp < Date.now();\n}\n',
    'src/web/page.ts': 'export const title = "session page";\n' + filler('page', 10),
    'tests/api/session.test.ts': "import { refreshSession } from '../../src/api/session';\ntest('x', () => {});\n",
    'docs/guide.md': 'How sessions work: each session has a token.\n',
    'package-lock.json': '{"refreshSession": "refreshSession refreshSession"}\n',
  }));
});
afterAll(() => removeTemp(parent));

describe('project rules', () => {
  it('reads root rules only when nothing is touched', async () => {
    expect(findRuleFiles(ws).map((f) => f.path)).toEqual(['AGENTS.md', 'CLAUDE.md']);
  });

  it('adds the rules of directories down to touched paths, nearest last', async () => {
    expect(findRuleFiles(ws, ['src/api/session.ts']).map((f) => f.path)).toEqual(['AGENTS.md', 'CLAUDE.md', 'src/api/AGENTS.md', 'src/api/.kiln/rules.md']);
    const text = await readProjectRules(ws, ['src/api/session.ts']);
    expect(text.indexOf('Root rule')).toBeLessThan(text.indexOf('API rule'));
    expect(text).toContain('nearer) file wins');
    expect(text).not.toContain('Web rule');
  });

  it('keeps the nearest rules whole when the cap is tight', async () => {
    const text = await readProjectRules(ws, ['src/api/session.ts'], { maxChars: 260 });
    expect(text).toContain('Kiln rule for the API.');
    expect(text).toContain('rules not shown for size');
    expect(text).toContain('AGENTS.md');
  });

  it('does not follow a rules symlink out of the workspace', async () => {
    const outside = path.join(parent, 'evil-rules.md');
    fs.writeFileSync(outside, 'EVIL RULES');
    fs.mkdirSync(path.join(ws, 'src/web/.kiln'), { recursive: true });
    fs.symlinkSync(outside, path.join(ws, 'src/web/.kiln/rules.md'));
    try {
      expect(await readProjectRules(ws, ['src/web/page.ts'])).not.toContain('EVIL');
    } finally {
      fs.rmSync(path.join(ws, 'src/web/.kiln'), { recursive: true });
    }
  });
});

describe('keywords', () => {
  it('keeps identifiers, quoted text and file names and drops filler words', () => {
    const k = extractKeywords('Fix the crash in `refreshSession` when "token expired" happens in src/api/session.ts');
    expect(k.slice(0, 3)).toEqual(['src/api/session.ts', 'refreshSession', 'token expired']);
    expect(k).toContain('refresh');
    expect(k).not.toContain('the');
    expect(k).not.toContain('fix');
  });

  it('finds CJK words and ASCII identifiers in a Chinese goal', () => {
    const k = extractKeywords('修复登录接口在会话过期时返回500的问题，检查 refreshSession 函数');
    expect(k[0]).toBe('refreshSession');
    expect(k).toContain('500');
    expect(k).toContain('登录');
    expect(k).toContain('过期');
    expect(k).not.toContain('修复');
    expect(k).not.toContain('问题');
  });
});

describe('rankFiles', () => {
  it('puts the defining file first and pulls in its test, not the lock file', async () => {
    const ranked = await rankFiles(ws, extractKeywords('Session refresh fails: refreshSession throws SessionExpiredError too early'));
    expect(ranked[0]!.path).toBe('src/api/session.ts');
    const paths = ranked.map((r) => r.path);
    expect(paths).toContain('tests/api/session.test.ts');
    expect(paths.indexOf('package-lock.json') === -1 || paths.indexOf('package-lock.json') > 2).toBe(true);
  });

  it('ranks by path name when the content does not say it', async () => {
    const ranked = await rankFiles(ws, ['expiry']);
    expect(ranked[0]!.path).toBe('src/api/expiry.ts');
  });
});

describe('snippets and diff', () => {
  it('shows numbered windows around matches, merged', () => {
    const s = relevantSnippets(ws, 'src/api/session.ts', ['refreshSession', 'SessionExpiredError'], { context: 1 });
    expect(s).toBe(
      [
        '  41\t',
        '  42\texport function refreshSession(token: string) {',
        '  43\t  if (isExpired(token)) throw new SessionExpiredError();',
        '  44\t  return rotate(token);',
      ].join('\n'),
    );
  });

  it('reports worktree changes and new files', async () => {
    expect(await currentDiff(ws)).toBe('');
    fs.appendFileSync(path.join(ws, 'docs/guide.md'), 'A new line.\n');
    fs.writeFileSync(path.join(ws, 'NEW.md'), 'x');
    try {
      const d = await currentDiff(ws);
      expect(d).toContain('+A new line.');
      expect(d).toContain('New untracked files: NEW.md');
    } finally {
      fs.rmSync(path.join(ws, 'NEW.md'));
      fs.writeFileSync(path.join(ws, 'docs/guide.md'), 'How sessions work: each session has a token.\n');
    }
  });
});

describe('packByPriority', () => {
  const items: ContextItem[] = [
    { kind: 'file', title: 'low', content: 'l'.repeat(4000), priority: 10 },
    { kind: 'rule', title: 'rules', content: 'r'.repeat(400), priority: 100 },
    { kind: 'file', title: 'mid', content: Array.from({ length: 100 }, (_, i) => `mid line ${i}`).join('\n'), priority: 50 },
  ];

  it('includes everything when it fits, highest priority first', () => {
    const p = packByPriority(items, 10_000);
    expect(p.items.every((i) => i.included && !i.truncated)).toBe(true);
    expect(p.text.indexOf('## rules')).toBeLessThan(p.text.indexOf('## mid'));
    expect(p.text.indexOf('## mid')).toBeLessThan(p.text.indexOf('## low'));
  });

  it('stays under the budget, cuts the item that partly fits at a line end, and names what was left out', () => {
    const p = packByPriority(items, 300);
    expect(p.tokens).toBeLessThanOrEqual(300);
    expect(estimateTokens(p.text)).toBe(p.tokens);
    const byTitle = Object.fromEntries(p.items.map((i) => [i.title, i]));
    expect(byTitle.rules).toMatchObject({ included: true, truncated: false });
    expect(byTitle.mid).toMatchObject({ included: true, truncated: true });
    expect(byTitle.low).toMatchObject({ included: false, tokens: 0 });
    expect(p.text).toMatch(/mid line \d+\n\[\.\.\. truncated for the token budget/);
    expect(p.text).toContain('[left out for the token budget: file low]');
  });

  it('counts CJK text as about a token per character', () => {
    expect(estimateTokens('abcd'.repeat(10))).toBe(10);
    expect(estimateTokens('会话过期')).toBe(4);
  });

  it('counts a message list as its JSON, CJK included, the way the scripted server reports usage', () => {
    const messages = [{ role: 'user', content: '会话过期' }];
    expect(estimateTokens(messages)).toBe(estimateTokens(JSON.stringify(messages)));
    expect(estimateTokens(messages)).toBeGreaterThan(Math.ceil(JSON.stringify(messages).length / 4));
  });
});

describe('buildContext', () => {
  it('packs rules, search hits and the ranked snippets under the budget', async () => {
    const c = await buildContext({ workspace: ws, goal: 'refreshSession throws SessionExpiredError too early', maxTokens: 4000 });
    expect(c.tokens).toBeLessThanOrEqual(4000);
    expect(c.text).toContain('Root rule: use pnpm');
    expect(c.text).toContain('## src/api/session.ts');
    expect(c.text).toContain('  42\texport function refreshSession');
    expect(c.text).not.toContain('package-lock.json:1');
    expect(c.files[0]!.path).toBe('src/api/session.ts');
    // search hits are a map of the rest: files already shown as snippets are not repeated there
    const search = c.items.find((i) => i.kind === 'search');
    const shown = new Set(c.files.map((f) => f.path));
    for (const line of (search ? (c.text.split('## Search results')[1] ?? '') : '').split('\n')) {
      const file = /^([\w./-]+):\d+:/.exec(line)?.[1];
      if (file) expect(shown.has(file), line).toBe(false);
    }
    expect(c.items.find((i) => i.kind === 'rule')?.priority).toBe(100);
  });

  it('leaves the rules out when they already travel in the system prompt', async () => {
    const c = await buildContext({ workspace: ws, goal: 'refreshSession throws', maxTokens: 4000, includeRules: false });
    expect(c.text).not.toContain('Root rule: use pnpm');
    expect(c.text).toContain('## src/api/session.ts');
  });

  it('respects a small budget by dropping the weakest items', async () => {
    const c = await buildContext({ workspace: ws, goal: 'refreshSession throws SessionExpiredError', maxTokens: 250 });
    expect(c.tokens).toBeLessThanOrEqual(250);
    expect(c.items.some((i) => !i.included)).toBe(true);
    expect(c.items.find((i) => i.kind === 'rule')?.included).toBe(true);
  });

  it('the naive baseline sends whole files and costs more tokens', async () => {
    const goal = 'refreshSession throws SessionExpiredError too early';
    const smart = await buildContext({ workspace: ws, goal, maxTokens: 100_000 });
    const naive = await buildNaiveContext({ workspace: ws, goal, maxTokens: 100_000 });
    expect(naive.text).toContain('export const more19 = 19;');
    const naiveSession = naive.items.find((i) => i.title === 'src/api/session.ts')!;
    const smartSession = smart.items.find((i) => i.title === 'src/api/session.ts')!;
    expect(naiveSession.tokens).toBeGreaterThan(smartSession.tokens);
  });
});
