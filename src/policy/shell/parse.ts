/**
 * A flattening parser for the shell commands an agent writes.
 *
 * sh-syntax (mvdan/sh in wasm) is the authority on whether a command is valid
 * shell (see validate.ts), but the AST it returns to JavaScript has lost its node
 * types and word parts, so it cannot tell us *which* programs run. This parser
 * does that part: it walks the same grammar and yields every simple command that
 * could execute — in pipelines, lists, subshells, groups, if/while/for/case bodies,
 * `$(...)`, backticks, process substitutions and function bodies — with each
 * word's static value where it has one. Anything it does not understand throws
 * ShellParseError, and the caller fails closed.
 */
import { KilnError } from '../../shared/errors.js';

/** Shell Kiln does not understand; the caller fails closed, and the same text fails again. */
export class ShellParseError extends KilnError {
  readonly retryable = false;
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
}

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
  /** contains an expansion this parser does not look inside (e.g. `${x:-$(cmd)}`) */
  opaque?: boolean;
  /** `for NAME in WORDS`: binds NAME to each word in turn (no program runs) */
  binds?: { name: string; words: Word[] };
}

const META = new Set([' ', '\t', '\n', ';', '&', '|', '<', '>', '(', ')']);
const SKIP_WORDS = new Set(['if', 'then', 'else', 'elif', 'fi', 'do', 'done', 'while', 'until', '{', '}', '!', 'time', 'esac']);

interface PendingHeredoc {
  redirect: Redirect;
  delim: string;
  strip: boolean;
  quoted: boolean;
}

class Parser {
  private pos = 0;
  private pending: PendingHeredoc[] = [];
  readonly out: ShellCommand[] = [];

  constructor(
    private readonly src: string,
    private readonly via: string[],
  ) {}

  parseAll(): ShellCommand[] {
    this.parseList(null, this.via);
    if (this.pos < this.src.length) throw new ShellParseError(`unexpected '${this.src[this.pos]}' at offset ${this.pos}`);
    return this.out;
  }

  private peek(n = 0): string {
    return this.src[this.pos + n] ?? '';
  }

  private startsWith(s: string): boolean {
    return this.src.startsWith(s, this.pos);
  }

  /** blanks, line continuations and comments; newlines are tokens */
  private skipBlanks(): void {
    for (;;) {
      const c = this.peek();
      if (c === ' ' || c === '\t' || c === '\r') this.pos++;
      else if (c === '\\' && this.peek(1) === '\n') this.pos += 2;
      else if (c === '#') {
        while (this.pos < this.src.length && this.peek() !== '\n') this.pos++;
      } else return;
    }
  }

  private readHeredocs(): void {
    for (const h of this.pending) {
      const lines: string[] = [];
      for (;;) {
        if (this.pos >= this.src.length) break;
        let nl = this.src.indexOf('\n', this.pos);
        if (nl < 0) nl = this.src.length;
        const line = this.src.slice(this.pos, nl);
        this.pos = Math.min(nl + 1, this.src.length);
        const cmp = h.strip ? line.replace(/^\t+/, '') : line;
        if (cmp === h.delim) break;
        lines.push(cmp);
      }
      h.redirect.heredoc = lines.join('\n');
      // an unquoted body is expanded: its substitutions run
      if (!h.quoted) this.scanForSubstitutions(h.redirect.heredoc);
    }
    this.pending = [];
  }

  private scanForSubstitutions(text: string): void {
    // parse the body as a double-quoted string without the quotes
    const p = new Parser(text, this.via);
    p.readDoubleQuotedBody(null);
    this.out.push(...p.out);
  }

  /**
   * Parses commands until `terminator` (an operator like ')' or ';;') or the end.
   * Returns the terminator found, or '' at the end of input.
   */
  private parseList(terminators: Set<string> | null, via: string[]): string {
    let expectCommand = true;
    for (;;) {
      this.skipBlanks();
      if (this.pos >= this.src.length) {
        if (terminators && !terminators.has('')) throw new ShellParseError('unexpected end of command');
        return '';
      }
      const c = this.peek();
      if (c === '\n') {
        this.pos++;
        this.readHeredocs();
        expectCommand = true;
        continue;
      }
      if (terminators) {
        for (const t of terminators) {
          if (t === 'esac') continue;
          if (t && this.startsWith(t)) {
            this.pos += t.length;
            return t;
          }
        }
        if (terminators.has('esac') && this.wordAhead('esac')) return 'esac';
      }
      const op = this.readListOperator();
      if (op) {
        if (op === '&' && this.out.length > 0) this.out[this.out.length - 1]!.background = true;
        if ((op === '|' || op === '|&') && this.out.length > 0) this.out[this.out.length - 1]!.pipedTo = true;
        expectCommand = true;
        continue;
      }
      if (!expectCommand) throw new ShellParseError(`unexpected '${c}' at offset ${this.pos}`);
      this.parseCommand(via);
      expectCommand = false;
    }
  }

  private wordAhead(w: string): boolean {
    if (!this.startsWith(w)) return false;
    const after = this.peek(w.length);
    return after === '' || META.has(after);
  }

  private readListOperator(): string {
    for (const op of ['&&', '||', '|&', ';;&', ';;', ';&', ';', '&', '|']) {
      if (this.startsWith(op)) {
        // `;;` and friends only end case items; seeing them here means a case parse went wrong
        if (op.startsWith(';;') || op === ';&') return '';
        this.pos += op.length;
        return op;
      }
    }
    return '';
  }

  private parseCommand(via: string[]): void {
    this.skipBlanks();
    if (this.startsWith('((')) {
      const start = this.pos;
      this.pos += 2;
      const opaque = this.skipBalanced('(', ')', 2);
      this.out.push(this.command([], [], [], start, via, { builtinTest: true, opaque }));
      return;
    }
    if (this.peek() === '(') {
      this.pos++;
      this.parseList(new Set([')']), via);
      this.readTrailingRedirects(via);
      return;
    }
    const save = this.pos;
    const first = this.readWord(via);
    if (first && !first.dynamic && first.raw === first.value) {
      const kw = first.value;
      if (SKIP_WORDS.has(kw)) return this.parseCommand(via);
      if (kw === '[[') return this.parseDoubleBracket(save, via);
      if (kw === 'for' || kw === 'select') return this.parseFor(via);
      if (kw === 'case') return this.parseCase(via);
      if (kw === 'function') {
        const name = this.readWord(via);
        this.skipBlanks();
        if (this.startsWith('()')) this.pos += 2;
        this.out.push(this.command([], [], [], save, via, { defines: name?.value ?? '' }));
        return this.parseCommand(via);
      }
      this.skipBlanks();
      if (this.startsWith('()') || /^\(\s*\)/.test(this.src.slice(this.pos, this.pos + 8))) {
        this.pos = this.src.indexOf(')', this.pos) + 1;
        this.out.push(this.command([], [], [], save, via, { defines: kw }));
        // the body: a compound command whose commands we judge like any other
        return this.parseCommand(via);
      }
    }
    this.pos = save;
    this.parseSimple(via);
  }

  private command(
    words: Word[],
    assigns: Word[],
    redirects: Redirect[],
    start: number,
    via: string[],
    extra: Partial<ShellCommand> = {},
  ): ShellCommand {
    return {
      words,
      assigns,
      redirects,
      text: this.src.slice(start, this.pos).trim(),
      via,
      pipedTo: false,
      background: false,
      ...extra,
    };
  }

  private parseSimple(via: string[]): void {
    const start = this.pos;
    const words: Word[] = [];
    const assigns: Word[] = [];
    const redirects: Redirect[] = [];
    let opaque = false;
    for (;;) {
      this.skipBlanks();
      const c = this.peek();
      if (c === '' || c === '\n' || c === ';' || c === '&' && !this.startsWith('&>') || c === '|' || c === ')') break;
      if (c === '(') {
        // `name (` only parses as a function definition, handled before
        throw new ShellParseError(`unexpected '(' at offset ${this.pos}`);
      }
      const redirect = this.readRedirect(via);
      if (redirect) {
        redirects.push(redirect);
        continue;
      }
      const w = this.readWord(via);
      if (!w) throw new ShellParseError(`unexpected '${c}' at offset ${this.pos}`);
      if (w.raw.includes('${') && /\$\{[^}]*(\$\(|`)/.test(w.raw)) opaque = true;
      if (words.length === 0 && /^[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=/.test(w.raw)) {
        assigns.push(w);
        // `a=(1 2 3)`: an array assignment
        if (w.raw.endsWith('=') && this.peek() === '(') {
          this.pos++;
          this.skipBalanced('(', ')', 1);
        }
      } else words.push(w);
    }
    // a keyword we skipped (`fi`, `}`) leaves nothing to run
    if (words.length === 0 && assigns.length === 0 && redirects.length === 0) return;
    this.out.push(this.command(words, assigns, redirects, start, via, opaque ? { opaque } : {}));
  }

  private readTrailingRedirects(via: string[]): void {
    for (;;) {
      this.skipBlanks();
      const r = this.readRedirect(via);
      if (!r) return;
      // redirects on a group apply to every command in it; judging them once on the last is enough
      const last = this.out[this.out.length - 1];
      if (last) last.redirects.push(r);
    }
  }

  private readRedirect(via: string[]): Redirect | null {
    const m = /^(\d*)(&>>|&>|<<<|<<-|<<|<>|>>|>&|<&|>\||>|<)/.exec(this.src.slice(this.pos, this.pos + 8));
    if (!m) return null;
    // `<(` and `>(` are process substitutions, words not redirects
    if ((m[2] === '<' || m[2] === '>') && this.peek(m[0].length) === '(' && m[1] === '') return null;
    this.pos += m[0].length;
    this.skipBlanks();
    const target = this.readWord(via);
    if (!target) throw new ShellParseError(`redirect ${m[2]} without a target`);
    const r: Redirect = { op: m[2]!, target, ...(m[1] ? { fd: m[1] } : {}) };
    if (m[2] === '<<' || m[2] === '<<-') {
      this.pending.push({ redirect: r, delim: target.value, strip: m[2] === '<<-', quoted: target.raw !== target.value || /['"\\]/.test(target.raw) });
    }
    return r;
  }

  private parseDoubleBracket(start: number, via: string[]): void {
    // inside [[ ]] `<`, `>`, `&&`, `(` are operators of the test, not of the shell
    for (;;) {
      this.skipBlanks();
      if (this.pos >= this.src.length) throw new ShellParseError('[[ without ]]');
      if (this.wordAhead(']]')) {
        this.pos += 2;
        break;
      }
      const c = this.peek();
      if (META.has(c) && c !== ' ') {
        this.pos++;
        continue;
      }
      this.readWord(via);
    }
    this.out.push(this.command([], [], [], start, via, { builtinTest: true }));
  }

  private parseFor(via: string[]): void {
    this.skipBlanks();
    if (this.startsWith('((')) {
      this.pos += 2;
      this.skipBalanced('(', ')', 2);
      return;
    }
    const start = this.pos;
    const name = this.readWord(via);
    const words: Word[] = [];
    this.skipBlanks();
    if (this.wordAhead('in')) {
      this.pos += 2;
      for (;;) {
        this.skipBlanks();
        const c = this.peek();
        if (c === '' || c === ';' || c === '\n') break;
        // the list's words expand (their substitutions run) but are not commands
        const w = this.readWord(via);
        if (!w) throw new ShellParseError(`unexpected '${c}' in for`);
        words.push(w);
      }
    } else {
      // `for x; do`: iterates over the script's arguments, unknown here
      words.push({ raw: '"$@"', value: '$@', dynamic: true, glob: false, tilde: false });
    }
    if (name) this.out.push(this.command([], [], [], start, via, { binds: { name: name.value, words } }));
  }

  private parseCase(via: string[]): void {
    this.skipBlanks();
    this.readWord(via);
    this.skipBlanks();
    if (!this.wordAhead('in')) throw new ShellParseError('case without in');
    this.pos += 2;
    for (;;) {
      this.skipBlanks();
      while (this.peek() === '\n' || this.peek() === ';') {
        this.pos++;
        this.skipBlanks();
      }
      if (this.pos >= this.src.length) throw new ShellParseError('case without esac');
      if (this.wordAhead('esac')) {
        this.pos += 4;
        return;
      }
      if (this.peek() === '(') this.pos++;
      for (;;) {
        this.skipBlanks();
        if (this.peek() === ')') {
          this.pos++;
          break;
        }
        if (this.peek() === '|') {
          this.pos++;
          continue;
        }
        if (!this.readWord(via)) throw new ShellParseError('bad case pattern');
      }
      const t = this.parseList(new Set([';;&', ';;', ';&', 'esac']), via);
      if (t === 'esac') {
        this.pos += 4;
        return;
      }
    }
  }

  /** skips to the `depth` closing chars; returns true when a substitution hides inside */
  private skipBalanced(open: string, close: string, depth: number): boolean {
    let d = depth;
    let hidden = false;
    while (this.pos < this.src.length && d > 0) {
      const c = this.peek();
      if (c === '$' && this.peek(1) === '(') hidden = true;
      if (c === '`') hidden = true;
      if (c === open) d++;
      else if (c === close) d--;
      this.pos++;
    }
    if (d > 0) throw new ShellParseError(`missing '${close}'`);
    return hidden;
  }

  private readWord(via: string[]): Word | null {
    this.skipBlanks();
    const start = this.pos;
    let value = '';
    let dynamic = false;
    let glob = false;
    const tilde = this.peek() === '~';
    while (this.pos < this.src.length) {
      const c = this.peek();
      if ((c === '<' || c === '>') && this.peek(1) === '(' && this.pos === start) {
        this.pos += 2;
        this.parseList(new Set([')']), [...via, `${c}(...)`]);
        value += `${c}(...)`;
        dynamic = true;
        continue;
      }
      if (META.has(c)) break;
      if (c === '\\') {
        if (this.peek(1) === '\n') {
          this.pos += 2;
          continue;
        }
        value += this.peek(1);
        this.pos += 2;
        continue;
      }
      if (c === "'") {
        const end = this.src.indexOf("'", this.pos + 1);
        if (end < 0) throw new ShellParseError('unterminated single quote');
        value += this.src.slice(this.pos + 1, end);
        this.pos = end + 1;
        continue;
      }
      if (c === '"') {
        this.pos++;
        const r = this.readDoubleQuotedBody('"');
        value += r.value;
        dynamic ||= r.dynamic;
        continue;
      }
      if (c === '$' && this.peek(1) === "'") {
        this.pos += 2;
        value += this.readAnsiC();
        continue;
      }
      if (c === '$' && this.peek(1) === '"') {
        this.pos += 2;
        const r = this.readDoubleQuotedBody('"');
        value += r.value;
        dynamic ||= r.dynamic;
        continue;
      }
      if (c === '$' || c === '`') {
        const r = this.readExpansion(via);
        if (r !== null) {
          value += r;
          dynamic = true;
          continue;
        }
      }
      if (c === '*' || c === '?' || c === '[' || (c === '{' && /^\{[^}\s]*,[^}\s]*\}/.test(this.src.slice(this.pos, this.pos + 200)))) glob = true;
      value += c;
      this.pos++;
    }
    if (this.pos === start) return null;
    return { raw: this.src.slice(start, this.pos), value, dynamic, glob, tilde };
  }

  /** reads after an opening `"` up to the closing one (or the end when `close` is null) */
  readDoubleQuotedBody(close: string | null): { value: string; dynamic: boolean } {
    let value = '';
    let dynamic = false;
    for (;;) {
      if (this.pos >= this.src.length) {
        if (close) throw new ShellParseError('unterminated double quote');
        return { value, dynamic };
      }
      const c = this.peek();
      if (close && c === close) {
        this.pos++;
        return { value, dynamic };
      }
      if (c === '\\') {
        const n = this.peek(1);
        if (n === '\n') this.pos += 2;
        else if ('$`"\\'.includes(n) && n !== '') {
          value += n;
          this.pos += 2;
        } else {
          value += c;
          this.pos++;
        }
        continue;
      }
      if (c === '$' || c === '`') {
        const r = this.readExpansion(this.via);
        if (r !== null) {
          value += r;
          dynamic = true;
          continue;
        }
      }
      value += c;
      this.pos++;
    }
  }

  private readAnsiC(): string {
    let value = '';
    const map: Record<string, string> = { n: '\n', t: '\t', r: '\r', a: '\x07', b: '\b', e: '\x1b', E: '\x1b', f: '\f', v: '\v', '\\': '\\', "'": "'", '"': '"', '?': '?' };
    for (;;) {
      if (this.pos >= this.src.length) throw new ShellParseError("unterminated $'");
      const c = this.peek();
      if (c === "'") {
        this.pos++;
        return value;
      }
      if (c === '\\') {
        const n = this.peek(1);
        const hex = /^x([0-9a-fA-F]{1,2})/.exec(this.src.slice(this.pos + 1, this.pos + 4));
        const oct = /^([0-7]{1,3})/.exec(this.src.slice(this.pos + 1, this.pos + 4));
        if (hex) {
          value += String.fromCharCode(parseInt(hex[1]!, 16));
          this.pos += 1 + hex[0].length;
        } else if (oct) {
          value += String.fromCharCode(parseInt(oct[1]!, 8));
          this.pos += 1 + oct[0].length;
        } else {
          value += map[n] ?? `\\${n}`;
          this.pos += 2;
        }
        continue;
      }
      value += c;
      this.pos++;
    }
  }

  /** at `$` or a backtick: consumes an expansion, returns its source text, or null for a literal `$` */
  private readExpansion(via: string[]): string | null {
    const start = this.pos;
    const c = this.peek();
    if (c === '`') {
      let end = this.pos + 1;
      let inner = '';
      for (;;) {
        const ch = this.src[end];
        if (ch === undefined) throw new ShellParseError('unterminated backquote');
        if (ch === '\\' && '`$\\'.includes(this.src[end + 1] ?? '')) {
          inner += this.src[end + 1];
          end += 2;
          continue;
        }
        if (ch === '`') break;
        inner += ch;
        end++;
      }
      this.pos = end + 1;
      this.out.push(...new Parser(inner, [...via, '`...`']).parseAll());
      return this.src.slice(start, this.pos);
    }
    const n = this.peek(1);
    if (n === '(' && this.peek(2) === '(') {
      this.pos += 3;
      if (this.skipBalanced('(', ')', 2)) {
        // `$(( $(cmd) ))`: rare enough to hand to a person rather than parse
        throw new ShellParseError('command substitution inside arithmetic is not supported');
      }
      return this.src.slice(start, this.pos);
    }
    if (n === '(') {
      this.pos += 2;
      this.parseList(new Set([')']), [...via, '$(...)']);
      return this.src.slice(start, this.pos);
    }
    if (n === '{') {
      this.pos += 2;
      let depth = 1;
      while (this.pos < this.src.length && depth > 0) {
        const ch = this.peek();
        if (ch === '\\') this.pos++;
        else if (ch === '{') depth++;
        else if (ch === '}') depth--;
        this.pos++;
      }
      if (depth > 0) throw new ShellParseError('unterminated ${');
      return this.src.slice(start, this.pos);
    }
    const m = /^\$(?:[A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-])/.exec(this.src.slice(this.pos, this.pos + 256));
    if (m) {
      this.pos += m[0].length;
      return m[0];
    }
    return null;
  }
}

/** Every simple command in `src`, in the order they would start. Throws ShellParseError. */
export function parseShell(src: string, via: string[] = []): ShellCommand[] {
  return new Parser(src, via).parseAll();
}
