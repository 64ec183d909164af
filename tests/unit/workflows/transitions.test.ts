/**
 * The phase table in src/workflows/machine.ts: every phase change real runs made is in it, a
 * change it does not list throws, and the README's diagram of the run is the table itself.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { Phase } from '../../../src/shared/types.js';
import { describeTransitions, IllegalTransitionError, initialState, setPhase, transition, TRANSITIONS } from '../../../src/workflows/machine.js';
import { testInput } from '../../helpers/run-input.js';

const fresh = () => initialState(testInput({ repo: '/r', model: 'scripted:/s.json' }));

/** Walks a run through phases as the workflow would, returning the phases the log shows. */
function walk(path: Phase[]): Phase[] {
  const s = fresh();
  for (const p of path) setPhase(s, p, 'now', 'why');
  return s.log.filter((l) => l.kind === 'phase').map((l) => l.text.split(':')[0] as Phase);
}

describe('the phase table', () => {
  it.each<[string, Phase[]]>([
    ['a pass on the first attempt', ['planning', 'editing', 'verifying', 'succeeded']],
    ['a failed verification, a retry, then a pass', ['planning', 'editing', 'verifying', 'retrying', 'editing', 'verifying', 'succeeded']],
    ['an approval granted while planning', ['planning', 'awaiting_approval', 'editing', 'verifying', 'succeeded']],
    ['an approval nobody answered, then a hint', ['planning', 'editing', 'awaiting_approval', 'needs_human', 'retrying', 'editing']],
    ['stuck with attempts left', ['planning', 'editing', 'retrying', 'editing']],
    ['the same failure twice, then accepted by a person', ['planning', 'editing', 'verifying', 'retrying', 'editing', 'verifying', 'needs_human', 'succeeded']],
    ['abandoned by a person', ['planning', 'editing', 'verifying', 'needs_human', 'blocked']],
    ['a budget ran out', ['planning', 'editing', 'blocked']],
    ['setup failed', ['blocked']],
    ['a host lost while verifying, rebuilt elsewhere', ['planning', 'editing', 'verifying', 'preparing', 'editing', 'verifying', 'succeeded']],
    ['cancelled while waiting for an approval', ['planning', 'editing', 'awaiting_approval', 'cancelled']],
    ['writing the artifacts failed after a pass', ['planning', 'editing', 'verifying', 'succeeded', 'blocked']],
  ])('allows %s', (_name, path) => {
    expect(walk(path)).toEqual(path);
  });

  it.each<[Phase, Phase]>([
    ['preparing', 'verifying'],
    ['planning', 'succeeded'],
    ['needs_human', 'editing'],
    ['retrying', 'verifying'],
    ['succeeded', 'editing'],
    ['cancelled', 'blocked'],
    ['blocked', 'succeeded'],
  ])('refuses %s → %s, and leaves the phase as it was', (from, to) => {
    const s = fresh();
    s.phase = from;
    expect(() => setPhase(s, to, 'now')).toThrow(IllegalTransitionError);
    expect(() => setPhase(s, to, 'now')).toThrow(`illegal phase transition ${from} → ${to}`);
    expect(s.phase).toBe(from);
    expect(s.log).toEqual([]);
  });

  it('treats the same phase without a note as no change, and with a note as a transition the table must allow', () => {
    const s = fresh();
    setPhase(s, 'preparing', 'now');
    expect(s.log).toEqual([]);
    s.phase = 'retrying';
    expect(() => setPhase(s, 'retrying', 'now', 'again')).toThrow(IllegalTransitionError);
    s.phase = 'blocked';
    setPhase(s, 'blocked', 'now', 'finalizeRun failed');
    expect(s.log.map((l) => l.text)).toEqual(['blocked: finalizeRun failed']);
  });

  it('gives every end state a way in, and no end state a way back to work', () => {
    for (const end of ['succeeded', 'blocked', 'cancelled'] as const) expect(TRANSITIONS.some((t) => t.to === end)).toBe(true);
    for (const t of TRANSITIONS) {
      if (t.from.some((f) => ['succeeded', 'blocked', 'cancelled'].includes(f))) expect(['blocked', 'cancelled']).toContain(t.to);
      expect(t.why.length).toBeGreaterThan(5);
    }
    expect(TRANSITIONS.some((t) => t.from.includes('cancelled'))).toBe(false);
  });

  it('holds every phase change of the recorded runs in tests/replay/histories', () => {
    const dir = fileURLToPath(new URL('../../replay/histories/', import.meta.url));
    const seen = new Set<string>();
    for (const file of readdirSync(dir).filter((f) => f.endsWith('.json'))) {
      const { from, lines } = phaseLines(JSON.parse(readFileSync(join(dir, file), 'utf8')));
      let at = from;
      for (const to of lines) {
        expect(transition(at, to), `${file}: ${at} → ${to}`).toBeDefined();
        seen.add(`${at}→${to}`);
        at = to;
      }
    }
    // the recordings cover the main paths, so this test would notice a table that lost them
    expect([...seen]).toEqual(
      expect.arrayContaining([
        'preparing→planning',
        'planning→editing',
        'editing→verifying',
        'verifying→succeeded',
        'verifying→retrying',
        'retrying→editing',
        'editing→awaiting_approval',
        'awaiting_approval→editing',
        'needs_human→retrying',
        'needs_human→succeeded',
        'editing→preparing',
      ]),
    );
  });

  it('is what the README shows as the run states', () => {
    const readme = readFileSync(fileURLToPath(new URL('../../../README.md', import.meta.url)), 'utf8');
    const block = /<!-- run-states[^>]*-->\n```text\n([\s\S]*?)\n```/.exec(readme)?.[1];
    expect(block, 'README.md needs the generated run-states block').toBeDefined();
    expect(block, 'README.md is out of date: paste describeTransitions() from src/workflows/machine.ts').toBe(describeTransitions());
  });
});

/** The phase log lines a recorded run handed to its activities, in order, and the phase it started in. */
function phaseLines(history: { events: Record<string, { input?: { payloads?: { data: string }[] } }>[] }): { from: Phase; lines: Phase[] } {
  const decode = (p: { data: string }) => JSON.parse(Buffer.from(p.data, 'base64').toString()) as unknown;
  const started = history.events[0]!.workflowExecutionStartedEventAttributes!.input!.payloads!;
  const carry = started[1] ? (decode(started[1]) as { state: { phase: Phase; logSeq: number } }) : undefined;
  // a continued run hands its carried log over again: those lines belong to the run before
  const bySeq = new Map<number, Phase>();
  for (const e of history.events) {
    for (const p of e.activityTaskScheduledEventAttributes?.input?.payloads ?? []) {
      // an argument left undefined is a binary/null payload: no data
      if (p.data === undefined) continue;
      const arg = decode(p) as { events?: { seq: number; kind: string; text: string }[] };
      for (const l of arg?.events ?? []) if (l.kind === 'phase' && l.seq > (carry?.state.logSeq ?? 0)) bySeq.set(l.seq, l.text.split(':')[0] as Phase);
    }
  }
  return { from: carry?.state.phase ?? 'preparing', lines: [...bySeq.entries()].sort((a, b) => a[0] - b[0]).map(([, p]) => p) };
}
