import { parseShell, ShellParseError, ShellTooComplexError, syntaxTree, type ShellCommand, type Word } from './parse.js';

function flags(w: Word): string {
  const f = [
    w.dynamic && 'dynamic',
    w.glob && 'glob',
    w.tilde && 'tilde',
    w.assembled && 'assembled',
    w.escaped && 'escaped',
    w.obfuscation && 'obfuscation',
  ].filter(Boolean);
  return f.length ? `{${f.join(',')}}` : '';
}

function show(c: ShellCommand): string {
  const parts = [
    ...c.assigns.map((a) => `assign ${JSON.stringify(a.value)}${flags(a)}`),
    ...c.words.map((w, i) => `${i === 0 ? 'program' : 'arg'} ${JSON.stringify(w.value)}${flags(w)}`),
    ...c.redirects.map(
      (r) => `redirect ${r.fd ?? ''}${r.op} ${JSON.stringify(r.target.value)}${r.heredoc !== undefined ? ` (here-doc, ${r.heredoc.length} chars)` : ''}`,
    ),
  ];
  const marks = [
    c.pipedTo && 'piped to next',
    c.background && 'background',
    c.builtinTest && 'test',
    c.defines !== undefined && `defines ${c.defines}`,
    c.binds && `binds ${c.binds.name}`,
  ].filter(Boolean);
  return `${c.node}${c.via.length ? ` via ${c.via.join(' > ')}` : ''}${marks.length ? ` [${marks.join(', ')}]` : ''}: ${parts.join('; ') || '(nothing runs)'}`;
}

/**
 * What the policy judged, for `kiln policy check --explain`: the typed tree tree-sitter-bash
 * built, then every command the walker found in it, in the order it judged them.
 */
export async function explainCommand(src: string): Promise<string[]> {
  const lines = ['syntax tree:', `  ${await syntaxTree(src)}`, 'commands judged:'];
  try {
    for (const c of await parseShell(src)) lines.push(`  ${show(c)}`);
  } catch (e) {
    if (!(e instanceof ShellParseError)) throw e;
    const why = e instanceof ShellTooComplexError ? 'too large to judge' : e.syntax ? 'does not parse' : 'not judged';
    lines.push(`  (none: ${why}: ${e.message})`);
  }
  return lines;
}
