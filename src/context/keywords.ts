/*
 * Turn a task goal ("fix the 500 in `loginHandler` when the session is expired") into
 * the strings worth searching the repository for. Code-shaped tokens are worth most:
 * they usually appear verbatim in the code. Plain words are kept but weigh less.
 */

const STOP_WORDS = new Set(
  `a an the and or but if then else when while of to in on at by for from with without into onto over under
  as is are was were be been being am do does did done doing have has had having it its this that these those
  there here where which who whom whose what why how all any some each every no not nor only own same so than
  too very can could will would shall should may might must need needs i me my we our you your he she they them
  their his her us also just more most other such again further once both few up down out off about above below
  between through during before after until because against per via etc please make makes made sure ensure
  see fix fixes fixed fixing add adds added adding update updates updated change changes changed implement implemented
  support supports use uses using used new instead currently now get gets set sets let lets like want wants
  should work works working broken issue issues problem problems bug bugs task code file files function method
  way thing things something anything everything case cases test tests`.split(/\s+/),
);

/** Task words that carry no search value in a Chinese goal: fix, add, problem, please... */
const CJK_STOP_WORDS = new Set(
  `的 了 和 与 或 在 是 把 被 将 对 从 到 给 让 要 会 能 可以 需要 应该 一个 这个 那个 这些 那些 我们 你 我 他 它
  修复 修改 改 添加 增加 新增 实现 支持 使用 问题 错误 时候 时 的时候 进行 处理 功能 代码 文件 函数 方法 请 帮 帮我
  一下 然后 并且 以及 如果 当 里 中 上 下 后 前 其 该 不 没有 已经 还 也 都 就 再 让 使其 确保`.split(/\s+/),
);

const ABBREVIATIONS = new Set(['e.g', 'i.e', 'etc', 'vs', 'e.g.', 'i.e.']);

const CJK = /[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]/;

export interface Keyword {
  text: string;
  /** how much a hit on it says about relevance; used for ordering and ranking */
  weight: number;
}

/** camelCase / PascalCase / snake_case / kebab-case → lower-case parts. */
export function splitIdentifier(id: string): string[] {
  return id
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .split(/[\s_\-.$:/]+/)
    .map((p) => p.toLowerCase())
    .filter((p) => p !== '');
}

/** Weight from shape alone: the rarer the shape in prose, the likelier it is code. */
export function keywordWeight(k: string): number {
  if (/[/\\]/.test(k) || /\.[a-z0-9]{1,5}$/i.test(k)) return 5; // path or file name
  if (/\s/.test(k)) return 4.5; // quoted phrase
  if (/[a-z][A-Z]|_|[A-Z]{2,}[a-z]|::|\.|\$/.test(k)) return 4; // camelCase, snake_case, Foo::bar, obj.prop
  if (/^[A-Z]/.test(k) && /[a-z]/.test(k)) return 3; // PascalWord
  if (/^\d{3,}$/.test(k)) return 2.5; // status codes, ports, error numbers
  if (CJK.test(k)) return 2 + Math.min(k.length, 4) * 0.25;
  return 1.5 + Math.min(k.length, 10) * 0.05;
}

function cjkWords(text: string): string[] {
  const seg = new Intl.Segmenter('zh', { granularity: 'word' });
  const out: string[] = [];
  for (const s of seg.segment(text)) {
    if (!s.isWordLike || !CJK.test(s.segment)) continue;
    if (s.segment.length < 2 || CJK_STOP_WORDS.has(s.segment)) continue;
    out.push(s.segment);
  }
  return out;
}

/** Keywords with weights, best first (ties keep the order of appearance). */
export function extractWeightedKeywords(goal: string, max = 12): Keyword[] {
  const found = new Map<string, Keyword & { order: number }>();
  let order = 0;
  const add = (text: string, weight = keywordWeight(text)) => {
    const t = text.trim();
    if (t.length < 2 || t.length > 120) return;
    const key = t.toLowerCase();
    const prev = found.get(key);
    if (prev) prev.weight = Math.max(prev.weight, weight);
    else found.set(key, { text: t, weight, order: order++ });
  };

  const addParts = (id: string) => {
    for (const p of splitIdentifier(id)) if (p.length >= 3 && !STOP_WORDS.has(p)) add(p, 1.5);
  };

  // Quoted text is what the person wants found verbatim: "…", '…', `…`, “…”, 「…」.
  let rest = goal;
  for (const m of goal.matchAll(/`([^`]+)`|"([^"]+)"|“([^”]+)”|「([^」]+)」|『([^』]+)』|(?<![A-Za-z])'([^']+)'(?![A-Za-z])/g)) {
    const q = m.slice(1).find((g) => g !== undefined);
    if (q) {
      add(q, Math.max(keywordWeight(q), 4.5));
      if (/^[A-Za-z_$][\w$]*$/.test(q)) addParts(q);
    }
    rest = rest.replace(m[0], ' ');
  }

  // File-like tokens: src/auth/login.ts, login.py, .env.example
  const prose = rest;
  for (const m of prose.matchAll(/[\w.@-]*[\w@-](?:\/[\w.@-]+)+|[\w-]+(?:\.[\w-]+)*\.[A-Za-z][A-Za-z0-9]{0,4}\b/g)) {
    const t = m[0].replace(/[.,;:]+$/, '');
    if (/^\d+(\.\d+)+$/.test(t) || ABBREVIATIONS.has(t.toLowerCase())) continue;
    add(t, 5);
    const base = t.split('/').pop()!;
    const stem = base.replace(/\.[^.]+$/, '');
    if (stem.length >= 3 && stem !== t && !STOP_WORDS.has(stem.toLowerCase())) add(stem, 3.5);
    rest = rest.replace(m[0], ' ');
  }

  // ASCII identifiers and words (also those embedded in a Chinese goal).
  for (const m of rest.matchAll(/[A-Za-z_$][\w$]*(?:(?:::|\.)[A-Za-z_$][\w$]*)*|\d{3,}/g)) {
    const t = m[0];
    const lower = t.toLowerCase();
    if (ABBREVIATIONS.has(lower)) continue;
    if (/^\d+$/.test(t)) {
      add(t);
      continue;
    }
    const parts = splitIdentifier(t);
    const isCompound = parts.length > 1;
    if (!isCompound && (STOP_WORDS.has(lower) || t.length < 3)) continue;
    add(t);
    if (isCompound) addParts(t);
  }

  for (const w of cjkWords(rest)) add(w);

  return [...found.values()]
    .sort((a, b) => b.weight - a.weight || a.order - b.order)
    .slice(0, max)
    .map(({ text, weight }) => ({ text, weight }));
}

/** The strings to search for, most telling first. */
export function extractKeywords(goal: string, max = 12): string[] {
  return extractWeightedKeywords(goal, max).map((k) => k.text);
}
