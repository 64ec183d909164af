import { estimateTokens } from '../shared/tokens.js';

export type ContextKind = 'rule' | 'diff' | 'search' | 'file' | 'layout';

export interface ContextItem {
  kind: ContextKind;
  title: string;
  content: string;
  /** higher goes first and is the last to be cut */
  priority: number;
}

export interface PackedItem {
  kind: ContextKind;
  title: string;
  priority: number;
  /** tokens this item takes in the packed text (0 when left out) */
  tokens: number;
  /** tokens the whole item would have taken */
  fullTokens: number;
  included: boolean;
  /** included, but cut to fit */
  truncated: boolean;
}

export interface PackedContext {
  text: string;
  items: PackedItem[];
  /** estimateTokens(text); never above the budget */
  tokens: number;
}

/** Below this, a cut item is mostly header and marker: leave it out instead. */
const MIN_PARTIAL_TOKENS = 40;
/** Room kept for the closing line that names what was left out. */
const OMITTED_NOTE_TOKENS = 60;

function render(item: ContextItem, content = item.content): string {
  return `## ${item.title}\n${content}\n\n`;
}

/** The longest prefix of the item, cut at a line end where possible, that fits in `budget` tokens. */
function truncateToFit(item: ContextItem, budget: number): string | null {
  const lines = item.content.split('\n').length;
  const marker = (shown: number) => `\n[... truncated for the token budget: ${shown} of ${item.content.length} characters shown, ${lines} lines in all]`;
  const fits = (len: number) => estimateTokens(render(item, item.content.slice(0, len) + marker(len))) <= budget;
  if (!fits(0)) return null;
  let lo = 0;
  let hi = item.content.length;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (fits(mid)) lo = mid;
    else hi = mid - 1;
  }
  const nl = item.content.lastIndexOf('\n', lo);
  const cut = nl > lo / 2 ? nl : lo;
  return item.content.slice(0, cut) + marker(cut);
}

/**
 * Fill `maxTokens` with the highest-priority items first (stable for equal priority).
 * The first item that does not fit whole is cut to the room left rather than dropped;
 * whatever is left out is named in a closing line, so nothing disappears silently.
 */
export function packByPriority(items: readonly ContextItem[], maxTokens: number): PackedContext {
  const order = items.map((item, i) => ({ item, i })).sort((a, b) => b.item.priority - a.item.priority || a.i - b.i);
  const full = order.map(({ item }) => estimateTokens(render(item)));
  const total = full.reduce((s, t) => s + t, 0);
  const budget = total <= maxTokens ? maxTokens : Math.max(0, maxTokens - OMITTED_NOTE_TOKENS);

  const parts: string[] = [];
  const packed: PackedItem[] = [];
  let used = 0;
  order.forEach(({ item }, j) => {
    const fullTokens = full[j]!;
    const base = { kind: item.kind, title: item.title, priority: item.priority, fullTokens };
    if (used + fullTokens <= budget) {
      parts.push(render(item));
      used += fullTokens;
      packed.push({ ...base, tokens: fullTokens, included: true, truncated: false });
      return;
    }
    const room = budget - used;
    const cut = room >= MIN_PARTIAL_TOKENS ? truncateToFit(item, room) : null;
    if (cut !== null) {
      const text = render(item, cut);
      const t = estimateTokens(text);
      parts.push(text);
      used += t;
      packed.push({ ...base, tokens: t, included: true, truncated: true });
    } else {
      packed.push({ ...base, tokens: 0, included: false, truncated: false });
    }
  });

  const omitted = packed.filter((p) => !p.included);
  let text = parts.join('');
  if (omitted.length > 0) {
    let note = `[left out for the token budget: ${omitted.map((o) => `${o.kind} ${o.title}`).join(', ')}]`;
    const room = maxTokens - estimateTokens(text);
    if (estimateTokens(note) > room) {
      note = `[left out for the token budget: ${omitted.length} item${omitted.length > 1 ? 's' : ''}]`;
    }
    if (estimateTokens(note) <= room) text += note;
  }
  text = text.trimEnd();
  return { text, items: packed, tokens: estimateTokens(text) };
}
