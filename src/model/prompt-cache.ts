import { createHash } from 'node:crypto';
import type { Usage } from '../shared/types.js';
import { blocksOf, type MessagesRequest } from './scripted-request.js';
import { estimateTokens } from '../shared/tokens.js';

/** One unit of the prompt in the order the API caches it: tools, then system, then messages. */
interface Segment {
  json: string;
  breakpoint: boolean;
}

function segment(value: Record<string, unknown>, extra?: Record<string, unknown>): Segment {
  const { cache_control, ...rest } = value;
  // The breakpoint marker itself is not part of the cached content: a block hashes the same
  // whether or not this request put the breakpoint on it.
  return { json: JSON.stringify(extra ? { ...extra, ...rest } : rest), breakpoint: cache_control != null };
}

function segmentsOf(req: MessagesRequest): Segment[] {
  const out: Segment[] = [];
  for (const tool of req.tools ?? []) out.push(segment(tool));
  const system = typeof req.system === 'string' ? [{ type: 'text', text: req.system }] : (req.system ?? []);
  for (const block of system) out.push(segment(block));
  for (const message of req.messages) for (const block of blocksOf(message)) out.push(segment(block, { role: message.role }));
  return out;
}

/**
 * Prompt-cache accounting the way the API reports it, for the scripted server. Per run it
 * remembers the prefixes (hashed) that earlier requests marked with cache_control; in a new
 * request the longest prefix seen before counts as cache read, the rest up to the last
 * breakpoint as cache write, and what follows as plain input. Unlike the API there is no
 * minimum cacheable length and no 5-minute expiry: scripted runs are short and tests need
 * the numbers to be predictable.
 */
export class PromptCacheLedger {
  private readonly runs = new Map<string, Set<string>>();

  constructor(private readonly maxRuns = 256) {}

  account(runId: string, req: MessagesRequest): Omit<Usage, 'output'> {
    const seen = this.seenFor(runId);
    let hash = createHash('sha256').update(req.model).digest('hex');
    let chars = 0;
    let readChars = 0;
    let lastBreakpointChars = 0;
    const written: string[] = [];
    for (const seg of segmentsOf(req)) {
      hash = createHash('sha256').update(hash).update('\n').update(seg.json).digest('hex');
      chars += seg.json.length;
      if (seen.has(hash)) readChars = chars;
      if (seg.breakpoint) {
        lastBreakpointChars = chars;
        written.push(hash);
      }
    }
    for (const h of written) seen.add(h);

    const total = estimateTokens({ system: req.system, tools: req.tools, messages: req.messages });
    const cacheRead = Math.ceil(readChars / 4);
    const cacheWrite = Math.max(0, Math.ceil(lastBreakpointChars / 4) - cacheRead);
    return { input: Math.max(0, total - cacheRead - cacheWrite), cacheRead, cacheWrite };
  }

  private seenFor(runId: string): Set<string> {
    let seen = this.runs.get(runId);
    if (seen) {
      this.runs.delete(runId); // re-inserted below: most recently used last
    } else {
      seen = new Set();
      if (this.runs.size >= this.maxRuns) {
        const oldest = this.runs.keys().next();
        if (!oldest.done) this.runs.delete(oldest.value);
      }
    }
    this.runs.set(runId, seen);
    return seen;
  }
}
