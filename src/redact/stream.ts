import { redact } from './redact.js';

export interface StreamRedactor {
  /** accepts the next chunk; returns the redacted text that is now safe to pass on (maybe '') */
  push(chunk: string): string;
  /** flushes whatever is held back, redacted */
  end(): string;
}

// A line longer than this with no newline is cut at its last whitespace: tokens
// never contain whitespace, so no secret is split by the cut.
const MAX_HELD_LINE = 16 * 1024;
// With no whitespace either (a base64 blob), keep this much back so a token at the
// end can still complete; the longest token shape we know is ~300 characters.
const TAIL_WINDOW = 1024;
// An open PEM block is held until its END line, but not forever: beyond this the
// block is masked and the stream drops everything until END arrives.
const MAX_HELD_PEM = 256 * 1024;

const PEM_BEGIN = /-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----/g;
const PEM_END = /-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----/;

/** Index of a BEGIN line in `text` that has no END after it, or -1. */
function openPemStart(text: string): number {
  let open = -1;
  PEM_BEGIN.lastIndex = 0;
  for (let m = PEM_BEGIN.exec(text); m !== null; m = PEM_BEGIN.exec(text)) {
    const rest = text.slice(m.index + m[0].length);
    const end = PEM_END.exec(rest);
    if (!end) {
      open = m.index;
      break;
    }
    PEM_BEGIN.lastIndex = m.index + m[0].length + end.index + end[0].length;
  }
  return open;
}

/**
 * Redacts output that arrives in chunks. Text is released a whole line at a time
 * (a secret never spans a line, except PEM blocks, which are held until their END).
 */
export function createStreamRedactor(): StreamRedactor {
  let held = '';
  let droppingPem = false;

  function release(force: boolean): string {
    let out = '';
    if (droppingPem) {
      const end = PEM_END.exec(held);
      if (!end) {
        held = force ? '' : held.slice(-TAIL_WINDOW);
        return '';
      }
      held = held.slice(end.index + end[0].length);
      droppingPem = false;
    }
    if (force) {
      out += redact(held);
      held = '';
      return out;
    }
    let cut = held.lastIndexOf('\n') + 1;
    if (cut === 0 && held.length > MAX_HELD_LINE) {
      const ws = Math.max(held.lastIndexOf(' '), held.lastIndexOf('\t'));
      cut = ws > 0 ? ws + 1 : held.length - TAIL_WINDOW;
    }
    const pem = openPemStart(held);
    if (pem >= 0 && pem < cut) cut = pem;
    if (pem >= 0 && held.length - pem > MAX_HELD_PEM) {
      out += redact(held.slice(0, pem)) + '[REDACTED:private-key]';
      held = '';
      droppingPem = true;
      return out;
    }
    if (cut <= 0) return out;
    out += redact(held.slice(0, cut));
    held = held.slice(cut);
    return out;
  }

  return {
    push(chunk) {
      held += chunk;
      return release(false);
    },
    end() {
      return release(true);
    },
  };
}
