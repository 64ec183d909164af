import { KilnError } from '../shared/errors.js';
import { bashParser, PARSE_TIMEOUT_MS, type BashParser, type SyntaxNode, type SyntaxTree } from './grammar.js';

/**
 * The one shell parser of the policy: tree-sitter-bash's typed tree, flattened into every simple
 * command that could execute — in pipelines, lists, subshells, groups, if/while/for/case bodies,
 * `$(...)`, backticks, process substitutions, array elements, expansions and function bodies —
 * with each word's static value where it has one.
 *
 * The walk is an allowlist: each node kind it meets is one it knows the meaning of. Anything else
 * (a construct it has not been taught) throws ShellParseError, and the caller fails closed.
 */
export class ShellParseError extends KilnError {
  // the same text fails the same way again
  readonly retryable = false;
  constructor(
    message: string,
    /** true: the text is not valid shell; false: valid, but a construct Kiln does not judge */
    readonly syntax: boolean,
  ) {
    super(message);
  }
}

/**
 * Past these a text is not a command a person writes or reads, and judging it would cost the
 * judge itself: the walk recurses once per level of the tree (a few hundred thousand levels of
 * `$(` overflow the stack), and tree-sitter's own recursive calls trap in wasm far sooner.
 */
export const SHELL_LIMITS = {
  /** characters of shell text (a here-document writing a file counts too) */
  chars: 100_000,
  /** levels of the syntax tree: `$(` adds three, a `&&` chain one per command */
  depth: 150,
  /** nodes of the syntax tree */
  nodes: 20_000,
};

/** The text is past one of SHELL_LIMITS: refused as a whole, never walked. */
export class ShellTooComplexError extends ShellParseError {
  constructor(message: string) {
    super(message, false);
  }
}

export interface Word {
  /** source text of the word */
  raw: string;
  /** value after quote removal; expansions stay as their source text */
  value: string;
  /** contains a parameter, command or arithmetic expansion */
  dynamic: boolean;
  /** contains unquoted glob or brace-expansion characters */
  glob: boolean;
  /** unquoted leading `~` */
  tilde: boolean;
  /** stands for a path `find` found (`{}` in -exec): inside the roots find was given */
  fromFind?: boolean;
  /** joins an expansion to other text (`$X$Y`, `cu$Y`): a value assembled when it runs */
  assembled?: boolean;
  /** spells letters as escape codes (`$'\x63url'`) */
  escaped?: boolean;
  /** a construct whose only use in a command is to hide what runs, e.g. `$IFS`, `${x@P}` */
  obfuscation?: string;
}

/** A word as written, with nothing to expand: a value Kiln derives (an option's value, a file a program makes). */
export const lit = (value: string): Word => ({ raw: value, value, dynamic: false, glob: false, tilde: false });

export interface Redirect {
  op: string;
  fd?: string;
  target: Word;
  /** here-document body (for `<<` and `<<-`) */
  heredoc?: string;
}

export interface ShellCommand {
  words: Word[];
  assigns: Word[];
  redirects: Redirect[];
  /** source text of the command, for people to read */
  text: string;
  /** wrappers it came from, e.g. ["$(...)"] */
  via: string[];
  /** its output feeds the next command of a pipeline */
  pipedTo: boolean;
  background: boolean;
  /** `[[ ... ]]`, `(( ... ))`: tests and arithmetic, no program runs */
  builtinTest?: boolean;
  /** the name a function definition binds (the command itself defines, not runs) */
  defines?: string;
  /** contains an expansion this parser does not look inside */
  opaque?: boolean;
  /** `for NAME in WORDS`: binds NAME to each word in turn (no program runs) */
  binds?: { name: string; words: Word[] };
  /** the tree-sitter node kind the command came from, shown by `kiln policy check --explain` */
  node: string;
  /**
   * variables this command (or a substitution walked just before it) reads in arithmetic, a
   * subscript or a numeric test: bash evaluates their values again as expressions, and a
   * subscript inside a value runs the `$(…)` in it
   */
  evaluates?: string[];
}

const ANSI_C: Record<string, string> = {
  a: '\x07',
  b: '\b',
  e: '\x1b',
  E: '\x1b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
  v: '\v',
  '\\': '\\',
  "'": "'",
  '"': '"',
  '?': '?',
};

/** `$'...'`: the string bash builds, and whether it spelled characters as codes. */
function ansiC(body: string): { value: string; escaped: boolean } {
  let escaped = false;
  const value = body.replace(/\\(x[0-9a-fA-F]{1,2}|u[0-9a-fA-F]{1,4}|U[0-9a-fA-F]{1,8}|[0-7]{1,3}|c.|.)/gs, (_m, e: string) => {
    if (/^[xuU]/.test(e) && e.length > 1) {
      escaped = true;
      return String.fromCodePoint(parseInt(e.slice(1), 16));
    }
    if (/^[0-7]/.test(e)) {
      escaped = true;
      return String.fromCharCode(parseInt(e, 8));
    }
    if (e[0] === 'c') {
      escaped = true;
      return String.fromCharCode(e.charCodeAt(1) & 31);
    }
    return ANSI_C[e] ?? `\\${e}`;
  });
  return { value, escaped };
}

const GLOB = /(^|[^\\])[*?[]/;
const BRACE = /(^|[^\\])\{[^}\s]*(,|\.\.)[^}\s]*\}/;
const IFS = /\$\{?IFS\b/;

/** Expression kinds inside `(( ))`, `$(( ))`, `[[ ]]` and C-style for: walked for substitutions. */
const EXPRESSION = new Set([
  'binary_expression',
  'unary_expression',
  'ternary_expression',
  'postfix_expression',
  'parenthesized_expression',
  'test_operator',
  'regex',
  'subscript',
  'variable_name',
  'special_variable_name',
  'variable_assignment',
  'extglob_pattern',
]);
/** Kinds that are one shell word (or part of one). */
const WORD = new Set([
  'word',
  'number',
  'string',
  'raw_string',
  'ansi_c_string',
  'translated_string',
  'concatenation',
  'simple_expansion',
  'expansion',
  'command_substitution',
  'process_substitution',
  'arithmetic_expansion',
  'brace_expression',
  'extglob_pattern',
  'array',
  'regex',
]);

/** `[[ ]]` operators that evaluate both sides as arithmetic */
const ARITHMETIC_TESTS = new Set(['-eq', '-ne', '-lt', '-le', '-gt', '-ge']);

class Walker {
  readonly out: ShellCommand[] = [];
  /** variables read as arithmetic since the last command was pushed */
  private readonly evaluated = new Set<string>();

  constructor(
    private readonly src: string,
    private readonly parser: BashParser,
    /** levels of tree already walked above this text (the code around a backtick substitution) */
    private depth = 0,
  ) {}

  /** Runs `f` one level deeper, refusing past the depth a tree may have. */
  private deeper<T>(f: () => T): T {
    if (++this.depth > SHELL_LIMITS.depth) throw tooDeep();
    try {
      return f();
    } finally {
      this.depth--;
    }
  }

  private unsupported(n: SyntaxNode): never {
    throw new ShellParseError(`the construct ${n.type} ("${n.text.slice(0, 40)}") is not one Kiln judges`, false);
  }

  statements(nodes: readonly SyntaxNode[], via: string[]): void {
    for (const n of nodes) this.statement(n, via);
  }

  /** One statement; returns nothing, pushes every command it runs onto `out`. */
  statement(n: SyntaxNode, via: string[]): void {
    this.deeper(() => this.statementAt(n, via));
  }

  private statementAt(n: SyntaxNode, via: string[]): void {
    const start = this.out.length;
    switch (n.type) {
      case 'comment':
        return;
      case 'command':
        this.simple(n, via, []);
        break;
      case 'redirected_statement':
        this.redirected(n, via);
        break;
      case 'pipeline':
        this.pipeline(n.namedChildren, via);
        break;
      case 'list':
      case 'subshell':
      case 'compound_statement':
      case 'do_group':
      case 'else_clause':
      case 'elif_clause':
      case 'negated_command':
      case 'if_statement':
      case 'while_statement':
        this.statements(n.namedChildren, via);
        break;
      case 'for_statement':
        this.forLoop(n, via);
        break;
      case 'c_style_for_statement':
        for (const c of n.namedChildren) {
          if (c.type === 'do_group' || c.type === 'compound_statement') this.statement(c, via);
          else this.expression(c, via);
        }
        break;
      case 'case_statement':
        this.caseStatement(n, via);
        break;
      case 'function_definition': {
        const name = n.childForFieldName('name');
        this.push(n, via, { defines: name?.text ?? '' });
        const body = n.childForFieldName('body');
        if (body) this.statement(body, via);
        break;
      }
      case 'test_command':
        for (const c of n.namedChildren) this.expression(c, via, false);
        this.push(n, via, { builtinTest: true });
        break;
      case 'variable_assignment':
        this.push(n, via, { assigns: [this.assignment(n, via)] });
        break;
      case 'variable_assignments':
        this.push(n, via, { assigns: n.namedChildren.map((c) => (c.type === 'variable_assignment' ? this.assignment(c, via) : this.unsupported(c))) });
        break;
      case 'declaration_command':
      case 'unset_command': {
        const keyword = n.children[0]!;
        const words = [
          this.literal(keyword.text),
          ...n.namedChildren.map((c) => (c.type === 'variable_assignment' ? this.assignment(c, via) : this.word(c, via))),
        ];
        this.push(n, via, { words });
        break;
      }
      default:
        this.unsupported(n);
    }
    if (n.nextSibling?.type === '&') for (const c of this.out.slice(start)) if (c.via.length === via.length) c.background = true;
  }

  /** Walks a pipeline's elements; returns the last command at this level, whose output goes on. */
  private pipeline(elements: readonly SyntaxNode[], via: string[], from?: ShellCommand): ShellCommand | undefined {
    let prev = from;
    for (const el of elements) {
      if (prev) prev.pipedTo = true;
      const start = this.out.length;
      this.statement(el, via);
      prev = this.out
        .slice(start)
        .reverse()
        .find((c) => c.via.length === via.length);
    }
    return prev;
  }

  private forLoop(n: SyntaxNode, via: string[]): void {
    const name = n.childForFieldName('variable');
    const values = n.childrenForFieldName('value').map((v) => this.word(v, via));
    if (name && values.length) this.push(n, via, { binds: { name: name.text, words: values } });
    const body = n.childForFieldName('body');
    if (body) this.statement(body, via);
  }

  private caseStatement(n: SyntaxNode, via: string[]): void {
    for (const c of n.namedChildren) {
      if (c.type === 'case_item') {
        for (const part of c.namedChildren) {
          if (part.type === 'comment') continue;
          if (c.childrenForFieldName('value').some((v) => v.startIndex === part.startIndex)) this.word(part, via);
          else this.statement(part, via);
        }
      } else if (c.type !== 'comment') this.word(c, via);
    }
  }

  private redirected(n: SyntaxNode, via: string[]): void {
    const body = n.childForFieldName('body');
    const redirectNodes = n.namedChildren.filter((c) => c !== body && c.startIndex !== body?.startIndex);
    const redirects: Redirect[] = [];
    const after: SyntaxNode[] = [];
    for (const r of redirectNodes) redirects.push(this.redirect(r, via, after));
    const cmd = body ? this.withRedirects(body, via, redirects, n) : this.push(n, via, { redirects });
    // what follows a here-document's start on its line: `cat <<EOF | sh`, `cat <<EOF && x`
    for (const a of after) {
      if (a.type === 'pipeline' && a.children[0]?.type === '|') this.pipeline(a.namedChildren, via, cmd);
      else this.statement(a, via);
    }
  }

  /**
   * tree-sitter hangs `a && b > f` and `a | b > f` on the whole list, but bash gives the
   * redirections to the last command only; a group or loop gets them as a whole.
   */
  private withRedirects(body: SyntaxNode, via: string[], redirects: Redirect[], outer: SyntaxNode): ShellCommand {
    if (body.type === 'command') return this.simple(body, via, redirects, body === outer ? body : outer);
    if (body.type === 'list' || body.type === 'pipeline') {
      const parts = body.namedChildren;
      const last = parts[parts.length - 1]!;
      if (body.type === 'list') this.statements(parts.slice(0, -1), via);
      const prev = body.type === 'pipeline' ? this.pipeline(parts.slice(0, -1), via) : undefined;
      if (prev) prev.pipedTo = true;
      return this.withRedirects(last, via, redirects, last);
    }
    this.statement(body, via);
    return this.push(outer, via, { redirects });
  }

  private redirect(r: SyntaxNode, via: string[], after: SyntaxNode[]): Redirect {
    const fd = r.childForFieldName('descriptor')?.text ?? r.namedChildren.find((c) => c.type === 'file_descriptor')?.text;
    const op = r.children.find((c) => !c.isNamed)?.text ?? '';
    const withFd = (x: Redirect): Redirect => (fd ? { ...x, fd } : x);
    if (r.type === 'file_redirect') {
      const dest = r.childrenForFieldName('destination');
      const target = dest.length ? this.word(dest[0]!, via) : this.literal('-');
      // `2>&-` closes the descriptor: nothing is written
      return withFd({ op: dest.length ? op : `${op}-`, target });
    }
    if (r.type === 'herestring_redirect') {
      const w = r.namedChildren.find((c) => WORD.has(c.type));
      return withFd({ op: '<<<', target: w ? this.word(w, via) : this.literal('') });
    }
    if (r.type === 'heredoc_redirect') {
      let delim = '';
      let body = '';
      for (const c of r.namedChildren) {
        if (c.type === 'heredoc_start') delim = c.text;
        else if (c.type === 'heredoc_body') {
          body = c.text;
          const quoted = /['"\\]/.test(delim);
          if (!quoted) for (const part of c.namedChildren) if (part.type !== 'heredoc_content') this.word(part, [...via, '<<here-doc']);
        } else if (c.type !== 'heredoc_end') after.push(c);
      }
      if (op === '<<-') body = body.replace(/^\t+/gm, '');
      const name = delim.replace(/['"\\]/g, '');
      return withFd({ op, target: this.literal(name), heredoc: body.endsWith('\n') ? body : body + (body ? '\n' : '') });
    }
    return this.unsupported(r);
  }

  /** A simple command: assignments, program and arguments, redirections. */
  private simple(n: SyntaxNode, via: string[], redirects: Redirect[], outer: SyntaxNode = n): ShellCommand {
    const assigns: Word[] = [];
    const words: Word[] = [];
    for (const c of n.namedChildren) {
      if (c.type === 'variable_assignment') assigns.push(this.assignment(c, via));
      else if (c.type === 'command_name') {
        const name = c.namedChildren[0];
        if (!name) this.unsupported(c);
        if (name.type === 'arithmetic_expansion' && name.text.startsWith('((')) {
          // `(( x = 1 ))` as a statement: arithmetic, no program runs
          this.expression(name, via);
          return this.push(outer, via, { builtinTest: true });
        }
        words.push(this.word(name, via));
      } else if (c.type === 'file_redirect' || c.type === 'herestring_redirect' || c.type === 'heredoc_redirect') {
        redirects.push(this.redirect(c, via, []));
      } else if (c.type === 'comment') continue;
      else words.push(this.word(c, via));
    }
    return this.push(outer, via, { words, assigns, redirects });
  }

  private assignment(n: SyntaxNode, via: string[]): Word {
    const nameNode = n.childForFieldName('name');
    if (!nameNode) this.unsupported(n);
    if (nameNode.type === 'subscript') for (const c of nameNode.namedChildren) this.expression(c, via);
    const op = n.children.find((c) => c.type === '=' || c.type === '+=')?.text ?? '=';
    const valueNode = n.childForFieldName('value');
    const value = valueNode ? this.word(valueNode, via) : this.literal('');
    const name = nameNode.type === 'subscript' ? nameNode.text : nameNode.text;
    return { ...value, raw: n.text, value: `${name}${op === '+=' ? '+=' : '='}${value.value}` };
  }

  private literal(value: string): Word {
    return { raw: value, value, dynamic: false, glob: false, tilde: false };
  }

  /**
   * `(( ))`, `$(( ))`, `[[ ]]` contents: no program runs, but substitutions inside do.
   * `arith`: the operands are evaluated as arithmetic (everywhere but a `[[ ]]` string test).
   */
  private expression(n: SyntaxNode, via: string[], arith = true): void {
    this.deeper(() => this.expressionAt(n, via, arith));
  }

  private expressionAt(n: SyntaxNode, via: string[], arith: boolean): void {
    if (arith) {
      if (n.type === 'variable_name') this.evaluated.add(n.text);
      else if (n.type === 'simple_expansion' || n.type === 'expansion') {
        const name = n.namedChildren.find((c) => c.type === 'variable_name');
        if (name) this.evaluated.add(name.text);
      }
    }
    if (WORD.has(n.type) && n.type !== 'arithmetic_expansion') {
      this.word(n, via);
      return;
    }
    if (n.type !== 'arithmetic_expansion' && !EXPRESSION.has(n.type)) this.unsupported(n);
    const numeric = arith || (n.type === 'binary_expression' && n.children.some((c) => ARITHMETIC_TESTS.has(c.text)));
    for (const c of n.namedChildren) this.expression(c, via, numeric);
  }

  /** One word: its value after quote removal, with every command it substitutes walked. */
  word(n: SyntaxNode, via: string[]): Word {
    return this.deeper(() => this.wordAt(n, via));
  }

  private wordAt(n: SyntaxNode, via: string[]): Word {
    const w = this.literal(n.text);
    switch (n.type) {
      case 'word':
      case 'extglob_pattern':
      case 'regex': {
        w.value = n.text.replace(/\\(\n|.)/gs, (_m, c: string) => (c === '\n' ? '' : c));
        w.glob = GLOB.test(n.text) || BRACE.test(n.text) || n.type === 'extglob_pattern';
        w.tilde = n.text.startsWith('~');
        return w;
      }
      case 'number':
      case 'variable_name':
        // `export PATH`, `local x`: a name, not an expansion
        return w;
      case 'brace_expression':
        w.glob = true;
        return w;
      case 'raw_string':
        w.value = n.text.slice(1, -1);
        return w;
      case 'ansi_c_string': {
        const { value, escaped } = ansiC(n.text.slice(2, -1));
        w.value = value;
        if (escaped) w.escaped = true;
        return w;
      }
      case 'string':
      case 'translated_string': {
        const inner = n.text.slice(n.type === 'string' ? 1 : 2, -1);
        w.value = inner.replace(/\\([$`"\\\n])/g, (_m, c: string) => (c === '\n' ? '' : c));
        for (const c of n.namedChildren) {
          if (c.type === 'string_content') continue;
          const part = this.word(c, via);
          w.dynamic = true;
          if (part.obfuscation) w.obfuscation = part.obfuscation;
        }
        // "$X$Y", "cu$Y": text assembled from an expansion and something else
        if (w.dynamic && n.namedChildren.length > 1) w.assembled = true;
        return w;
      }
      case 'concatenation': {
        const parts = n.namedChildren.map((c) => this.word(c, via));
        w.value = parts.map((p) => p.value).join('');
        w.dynamic = parts.some((p) => p.dynamic);
        w.glob =
          parts.some((p) => p.glob) ||
          BRACE.test(
            n.namedChildren
              .filter((c) => c.type === 'word')
              .map((c) => c.text)
              .join(''),
          );
        w.tilde = parts[0]?.tilde ?? false;
        if (w.dynamic) w.assembled = true;
        if (parts.some((p) => p.escaped)) w.escaped = true;
        const o = parts.find((p) => p.obfuscation);
        if (o) w.obfuscation = o.obfuscation!;
        return w;
      }
      case 'simple_expansion':
        w.dynamic = true;
        if (IFS.test(n.text)) w.obfuscation = '$IFS splits words at characters of its choosing';
        return w;
      case 'expansion': {
        w.dynamic = true;
        if (IFS.test(n.text)) w.obfuscation = '$IFS splits words at characters of its choosing';
        if (/@P\}$/.test(n.text)) w.obfuscation = '${var@P} expands a prompt string, which runs the command substitutions inside the value';
        for (const c of n.namedChildren) {
          if (c.type === 'variable_name' || c.type === 'special_variable_name') continue;
          if (c.type === 'subscript') for (const s of c.namedChildren) this.expression(s, via);
          else if (WORD.has(c.type)) this.word(c, via);
          else this.unsupported(c);
        }
        return w;
      }
      case 'command_substitution': {
        w.dynamic = true;
        if (n.text.startsWith('`')) this.backticks(n.text.slice(1, -1), [...via, '`...`']);
        else this.statements(n.namedChildren, [...via, '$(...)']);
        return w;
      }
      case 'process_substitution':
        w.dynamic = true;
        this.statements(n.namedChildren, [...via, `${n.text[0]}(...)`]);
        return w;
      case 'arithmetic_expansion':
        w.dynamic = true;
        this.expression(n, via);
        return w;
      case 'array': {
        const parts = n.namedChildren.map((c) => this.word(c, via));
        w.dynamic = parts.some((p) => p.dynamic);
        return w;
      }
      default:
        return this.unsupported(n);
    }
  }

  /**
   * Inside backticks bash first removes the backslashes before \\, \` and \$, then parses what is
   * left: `\`id\`` within backticks is a nested substitution. The grammar reads the text before
   * that step, so the text after it is parsed again, the way bash will.
   */
  private backticks(inner: string, via: string[]): void {
    const text = inner.replace(/\\([\\`$])/g, '$1');
    const tree = parseBounded(this.parser, text, this.depth);
    try {
      if (tree.rootNode.hasError) throw new ShellParseError(`the code inside backticks does not parse: ${text.slice(0, 40)}`, true);
      const nested = new Walker(text, this.parser, this.depth);
      nested.statements(tree.rootNode.namedChildren, via);
      this.out.push(...nested.out);
    } finally {
      tree.delete();
    }
  }

  private push(n: SyntaxNode, via: string[], fields: Partial<ShellCommand>): ShellCommand {
    const c: ShellCommand = {
      words: [],
      assigns: [],
      redirects: [],
      text: this.src.slice(n.startIndex, n.endIndex).trim(),
      via,
      pipedTo: false,
      background: false,
      node: n.type,
      ...fields,
    };
    if (this.evaluated.size) {
      c.evaluates = [...this.evaluated];
      this.evaluated.clear();
    }
    this.out.push(c);
    return c;
  }
}

const tooDeep = () =>
  new ShellTooComplexError(`it nests more than ${SHELL_LIMITS.depth} levels deep (substitutions, subshells, groups or a chain of commands)`);

/**
 * Parses `src` and measures the tree without recursion before anything recurses over it: one
 * over-deep tree given to a recursive call inside tree-sitter traps in wasm and leaves the
 * parser unusable for every later command in the process.
 */
function parseBounded(parser: BashParser, src: string, depthAbove = 0): SyntaxTree {
  if (src.length > SHELL_LIMITS.chars) throw new ShellTooComplexError(`it is ${src.length} characters long, more than ${SHELL_LIMITS.chars}`);
  const deadline = performance.now() + PARSE_TIMEOUT_MS;
  const tree = parser.parse(src, null, { progressCallback: () => performance.now() > deadline });
  if (!tree) {
    parser.reset();
    throw new ShellTooComplexError(`it takes longer than ${PARSE_TIMEOUT_MS} ms to parse`);
  }
  const cursor = tree.walk();
  try {
    let depth = depthAbove;
    let nodes = 1;
    for (;;) {
      if (cursor.gotoFirstChild()) {
        if (++depth > SHELL_LIMITS.depth) throw tooDeep();
      } else {
        while (!cursor.gotoNextSibling()) {
          if (!cursor.gotoParent()) return tree;
          depth--;
        }
      }
      if (++nodes > SHELL_LIMITS.nodes) throw new ShellTooComplexError(`it has more than ${SHELL_LIMITS.nodes} parts`);
    }
  } catch (e) {
    tree.delete();
    throw e;
  } finally {
    cursor.delete();
  }
}

/** Where the text stops being shell, for an error message a person can act on. */
function firstError(n: SyntaxNode): SyntaxNode | null {
  if (n.type === 'ERROR' || n.isMissing) return n;
  for (const c of n.children) {
    if (!c.hasError && !c.isMissing) continue;
    const e = firstError(c);
    if (e) return e;
  }
  return n.hasError ? n : null;
}

/** tree-sitter reports an unclosed quote as a stray token; say what a person would. */
function unbalancedQuote(src: string): string | null {
  let quote: string | null = null;
  for (let i = 0; i < src.length; i++) {
    const c = src[i]!;
    if (quote === null && c === '\\') i++;
    else if (quote === '"' && c === '\\') i++;
    else if (quote === null && (c === '"' || c === "'")) quote = c;
    else if (c === quote) quote = null;
  }
  return quote === null ? null : `unterminated ${quote === '"' ? 'double' : 'single'} quote`;
}

function lineCol(src: string, index: number): string {
  const before = src.slice(0, index).split('\n');
  return `${before.length}:${before[before.length - 1]!.length + 1}`;
}

/**
 * Commands parsed lately, by their text and wrappers: a turn parses its command for the policy
 * and again to see which checks it ran, and the checks themselves every turn. The parse is a
 * function of the text alone; each caller gets its own copy. Failures are not kept (a parse cut
 * by its time limit may pass another time).
 */
const parsed = new Map<string, ShellCommand[]>();
const MAX_PARSED = 256;
const MAX_PARSED_CHARS = 4096;

/** Every simple command `src` runs, in the order bash would start them (substitutions first). */
export async function parseShell(src: string, via: string[] = []): Promise<ShellCommand[]> {
  if (src.length > MAX_PARSED_CHARS) return parseShellNow(src, via);
  const key = JSON.stringify([src, via]);
  let cmds = parsed.get(key);
  if (cmds) {
    // the most recently used last: the first is the one let go
    parsed.delete(key);
  } else {
    cmds = await parseShellNow(src, via);
    if (parsed.size >= MAX_PARSED) parsed.delete(parsed.keys().next().value!);
  }
  parsed.set(key, cmds);
  return structuredClone(cmds);
}

async function parseShellNow(src: string, via: string[]): Promise<ShellCommand[]> {
  const parser = await bashParser();
  const tree = parseBounded(parser, src);
  try {
    const root = tree.rootNode;
    if (root.hasError) {
      const e = firstError(root);
      const where = e ? `${lineCol(src, e.startIndex)}: ` : '';
      const what = e?.isMissing ? `missing ${e.type}` : (unbalancedQuote(src) ?? `unexpected ${JSON.stringify((e?.text ?? '').slice(0, 20))}`);
      throw new ShellParseError(`${where}${what}`, true);
    }
    const w = new Walker(src, parser);
    w.statements(root.namedChildren, via);
    return w.out;
  } finally {
    tree.delete();
  }
}

/**
 * The typed tree itself, for `kiln policy check --explain`, in tree-sitter's own notation; printed
 * from a cursor, since tree-sitter's printer recurses.
 */
export async function syntaxTree(src: string): Promise<string> {
  const parser = await bashParser();
  let tree: SyntaxTree;
  try {
    tree = parseBounded(parser, src);
  } catch (e) {
    if (e instanceof ShellTooComplexError) return `(not shown: ${e.message})`;
    throw e;
  }
  const cursor = tree.walk();
  try {
    let out = '';
    // for each open level: whether it printed a node (named ones do), so its close is printed too
    const open: boolean[] = [];
    const enter = () => {
      const shown = cursor.nodeIsNamed || cursor.nodeIsMissing;
      if (shown) {
        const field = cursor.currentFieldName;
        const kind = cursor.nodeIsMissing ? `MISSING ${cursor.nodeType}` : cursor.nodeType;
        out += `${out && !out.endsWith('(') ? ' ' : ''}${field ? `${field}: ` : ''}(${kind}`;
      }
      open.push(shown);
    };
    const leave = () => {
      if (open.pop()) out += ')';
    };
    enter();
    for (;;) {
      if (cursor.gotoFirstChild()) enter();
      else {
        leave();
        while (!cursor.gotoNextSibling()) {
          if (!cursor.gotoParent()) return out;
          leave();
        }
        enter();
      }
    }
  } finally {
    cursor.delete();
    tree.delete();
  }
}
