/**
 * The first message's context is started when prepare is done and taken by the first turn: the
 * same context the turn would have built, and taken once, so that a later first message (a new
 * conversation after a rebuild) is built from the worktree as it is then, never served stale.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { firstContext, firstContextAhead } from '../../../src/activities/first-context.js';
import type { RunRecord } from '../../../src/store/run-files.js';
import { buildContext } from '../../../src/context/index.js';
import { repoWith } from '../../helpers/repo.js';
import { testInput } from '../../helpers/run-input.js';

function record(): RunRecord {
  const repo = repoWith({ 'src/session.js': 'function getSession(id) {\n  return sessions[id];\n}\n', 'README.md': '# sessions\n' });
  return {
    input: testInput({ repo, model: 'scripted:/dev/null' }),
    worktree: repo,
    baseCommit: 'HEAD',
    checks: [],
    hostQueue: 'unit-host',
    createdAt: new Date(0).toISOString(),
  };
}

describe('the first context, started at prepare', () => {
  it('is the context the first turn would build itself', async () => {
    const rec = record();
    void firstContextAhead(rec);
    const ahead = await firstContext(rec);
    const own = await buildContext({ workspace: rec.worktree, goal: rec.input.goal, maxTokens: 6000, includeRules: false });
    expect(ahead.text).toBe(own.text);
    expect(ahead.text).toContain('getSession');
  });

  it('attack: taken once; the next first message sees the worktree as it is then (control: the one started before the change does not)', async () => {
    const rec = record();
    await firstContextAhead(rec);
    writeFileSync(join(rec.worktree, 'src', 'revoked.js'), 'function getSessionRevoked() {}\n');
    const started = await firstContext(rec);
    expect(started.text).not.toContain('revoked.js');
    const later = await firstContext(rec);
    expect(later.text).toContain('revoked.js');
  });
});
