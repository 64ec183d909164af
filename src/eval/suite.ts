/**
 * A suite on disk: `<suite>/suite.json` (optional: name, defaults) and one folder per task with
 * `task.json` and the fixture repo (`repo/`, or the folder task.json names). Validated up front
 * so a typo fails before any run starts, naming the file and the field.
 */
import { existsSync, statSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { basename, join, resolve, sep } from 'node:path';
import { z } from 'zod';
import { loadScript } from '../model/index.js';
import { UsageError } from '../shared/errors.js';
import { loadJsonFile } from '../shared/zod-error.js';
import { parseIntegrity, parseSpec, SOURCE_KINDS, type TaskSource } from './source.js';
import { FAILURE_CLASSES, REVIEW_CLASSES, TASK_KINDS, type EvalSuite, type EvalTask, type ReviewClass, type TaskBudgets } from './types.js';

const PHASES = ['succeeded', 'blocked', 'needs_human', 'cancelled'] as const;

const budgetsSchema = z.strictObject({
  maxTurns: z.number().int().positive().optional(),
  maxTokens: z.number().int().positive().optional(),
  maxUsd: z.number().positive().optional(),
  maxWallMs: z.number().int().positive().optional(),
});

const expectSchema = z.strictObject({
  outcome: z.enum([...PHASES, 'not_succeeded']),
  failureClass: z.enum(FAILURE_CLASSES).nullable().optional(),
  attempts: z.number().int().positive().optional(),
  needsHuman: z.boolean().optional(),
  testsModified: z.boolean().optional(),
  reflections: z.number().int().min(0).optional(),
  honest: z.boolean().optional(),
});

const hiddenCheckSchema = z.strictObject({ run: z.string().trim().min(1), class: z.enum(REVIEW_CLASSES as [ReviewClass, ...ReviewClass[]]) });

/** `{ "npm": "qs@6.13.0", "integrity": "sha512-…" }`: exactly one registry, and the archive's pinned hash. */
const sourceSchema = z
  .strictObject({
    npm: z.string().optional(),
    pypi: z.string().optional(),
    go: z.string().optional(),
    crate: z.string().optional(),
    integrity: z.string().refine((s) => typeof parseIntegrity(s) !== 'string', 'expected sha512-<base64>, sha256:<hex> or a Go h1: sum'),
  })
  .transform((s, ctx): TaskSource => {
    const kinds = SOURCE_KINDS.filter((k) => s[k] !== undefined);
    if (kinds.length !== 1) {
      ctx.addIssue({ code: 'custom', message: `name exactly one of ${SOURCE_KINDS.join(', ')}` });
      return z.NEVER;
    }
    const kind = kinds[0]!;
    const spec = parseSpec(kind, s[kind]!);
    if (typeof spec === 'string') {
      ctx.addIssue({ code: 'custom', path: [kind], message: spec });
      return z.NEVER;
    }
    return { kind, spec: s[kind]!, integrity: s.integrity };
  });

const mutationSchema = z.strictObject({ file: z.string().min(1), find: z.string().min(1), replace: z.string() });

const taskSchema = z.strictObject({
  name: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,60}$/, 'letters, digits, ".", "_" or "-"'),
  kind: z.enum(TASK_KINDS),
  goal: z.string().trim().min(1),
  description: z.string().optional(),
  repo: z.string().optional(),
  source: sourceSchema.optional(),
  mutation: z.union([mutationSchema, z.array(mutationSchema).min(1)]).optional(),
  expected_files: z.array(z.string().min(1)).default([]),
  tests: z.array(z.string().min(1)).default([]),
  checks: z.array(z.string().min(1)).default([]),
  setup: z.array(z.string().min(1)).default([]),
  script: z.string().optional(),
  attempt_scripts: z.array(z.string().min(1)).min(1).optional(),
  hidden_checks: z.array(hiddenCheckSchema).default([]),
  hidden: z.string().optional(),
  budgets: budgetsSchema.optional(),
  expect: expectSchema.optional(),
  expect_attempts: expectSchema.optional(),
});

const suiteSchema = z.strictObject({
  name: z.string().optional(),
  description: z.string().optional(),
  defaults: z.strictObject({ budgets: budgetsSchema.optional(), checks: z.array(z.string()).optional() }).optional(),
});

export async function loadSuite(dirArg: string, only?: string[]): Promise<EvalSuite> {
  const dir = resolve(dirArg);
  if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new UsageError(`--suite ${dirArg}: no such directory`);
  const suiteFile = join(dir, 'suite.json');
  const suite = existsSync(suiteFile) ? await loadJson(suiteSchema, suiteFile) : {};
  const tasks: EvalTask[] = [];
  for (const entry of (await readdir(dir, { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name))) {
    const file = join(dir, entry.name, 'task.json');
    if (!entry.isDirectory() || !existsSync(file)) continue;
    tasks.push(await loadTask(join(dir, entry.name), suite.defaults?.budgets ?? {}, suite.defaults?.checks ?? []));
  }
  if (!tasks.length) throw new UsageError(`${dir}: no tasks (a task is a folder with a task.json)`);
  const names = new Set<string>();
  for (const t of tasks) {
    if (names.has(t.name)) throw new UsageError(`${dir}: two tasks are named ${t.name}`);
    names.add(t.name);
  }
  let chosen = tasks;
  if (only?.length) {
    const unknown = only.filter((n) => !names.has(n));
    if (unknown.length) throw new UsageError(`--task ${unknown.join(', ')}: not in ${dir} (tasks: ${[...names].join(', ')})`);
    chosen = tasks.filter((t) => only.includes(t.name));
  }
  return { name: suite.name ?? basename(dir), dir, tasks: chosen };
}

async function loadTask(dir: string, defaultBudgets: TaskBudgets, defaultChecks: string[]): Promise<EvalTask> {
  const file = join(dir, 'task.json');
  const t = await loadJson(taskSchema, file);
  // with a source, the repo folder only lays the task's own files over the package, and may be absent
  const repoDir = resolve(dir, t.repo ?? 'repo');
  const hasRepo = existsSync(repoDir) && statSync(repoDir).isDirectory();
  if (!hasRepo && (!t.source || t.repo !== undefined)) throw new UsageError(`${file}: repo ${t.repo ?? 'repo'}: no such folder`);
  let script: string | undefined;
  if (t.script) {
    script = resolve(dir, t.script);
    await loadScript(script); // a broken transcript fails here, before any run starts
  }
  const attemptScripts = t.attempt_scripts?.map((s) => resolve(dir, s));
  for (const s of attemptScripts ?? []) await loadScript(s);
  // the hidden files live beside the task, never in the fixture the run is given
  const hiddenDir = resolve(dir, t.hidden ?? 'hidden');
  const hasHidden = existsSync(hiddenDir) && statSync(hiddenDir).isDirectory();
  if (t.hidden !== undefined && !hasHidden) throw new UsageError(`${file}: hidden ${t.hidden}: no such folder`);
  if (hasHidden && hasRepo && (repoDir === hiddenDir || hiddenDir.startsWith(repoDir + sep)))
    throw new UsageError(`${file}: the hidden folder is inside the fixture repo, so the run would see it`);
  return {
    name: t.name,
    kind: t.kind,
    goal: t.goal,
    description: t.description,
    dir,
    ...(hasRepo ? { repoDir } : {}),
    ...(t.source ? { source: t.source } : {}),
    mutations: t.mutation === undefined ? [] : Array.isArray(t.mutation) ? t.mutation : [t.mutation],
    expectedFiles: t.expected_files,
    tests: t.tests,
    checks: t.checks.length ? t.checks : defaultChecks,
    setup: t.setup,
    script,
    ...(attemptScripts ? { attemptScripts } : {}),
    ...(t.hidden_checks.length ? { hiddenChecks: t.hidden_checks } : {}),
    ...(hasHidden ? { hiddenDir } : {}),
    budgets: { ...defaultBudgets, ...t.budgets },
    expect: t.expect ?? { outcome: 'succeeded' },
    ...(t.expect_attempts ? { expectAttempts: t.expect_attempts } : {}),
  };
}

function loadJson<T extends z.ZodType>(schema: T, file: string): Promise<z.infer<T>> {
  return loadJsonFile(file, schema, (problem) => new UsageError(`${file}: ${problem}`));
}
