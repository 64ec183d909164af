/**
 * Run files are written without a mkdir first (one trip through the thread pool fewer per write);
 * a directory that is missing, at the first write or because it was removed since, is made then.
 */
import { afterEach, expect, test } from 'vitest';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { appendJsonl, writeJsonAtomic, writeTextAtomic, writeWorkflowEvents } from '../../../src/store/run-files.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function temp(): string {
  const d = mkdtempSync(join(tmpdir(), 'kiln-run-files-'));
  dirs.push(d);
  return d;
}

test('each kind of write makes its missing directories, and makes them again once removed', async () => {
  const root = temp();
  const deep = join(root, 'a', 'b', 'state', 'calls', 'x.json');
  await writeJsonAtomic(deep, { n: 1 });
  expect(JSON.parse(readFileSync(deep, 'utf8'))).toEqual({ n: 1 });
  rmSync(join(root, 'a'), { recursive: true });
  await writeJsonAtomic(deep, { n: 2 });
  expect(JSON.parse(readFileSync(deep, 'utf8'))).toEqual({ n: 2 });

  const log = join(root, 'runs', 'r1', 'model-calls.jsonl');
  await appendJsonl(log, { call: 1 });
  await appendJsonl(log, { call: 2 });
  expect(
    readFileSync(log, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l).call),
  ).toEqual([1, 2]);

  // writeWorkflowEvents: events.jsonl in the run's directory, its seq in state/
  const repo = join(root, 'repo');
  await writeWorkflowEvents(repo, 'run-1', [{ seq: 1, at: '2026-01-01T00:00:00Z', kind: 'phase', text: 'planning' }]);
  const [events] = readdirSync(join(repo, '.kiln', 'runs', 'run-1')).filter((f) => f === 'events.jsonl');
  expect(events).toBe('events.jsonl');
});

test('control: a path whose directory is a file still fails, and leaves no temp file', async () => {
  const root = temp();
  writeFileSync(join(root, 'state'), 'not a directory');
  await expect(writeTextAtomic(join(root, 'state', 'run.json'), '{}')).rejects.toMatchObject({ code: 'ENOTDIR' });
  await expect(appendJsonl(join(root, 'state', 'events.jsonl'), { a: 1 })).rejects.toMatchObject({ code: 'ENOTDIR' });
  expect(readdirSync(root)).toEqual(['state']);
});
