/**
 * The workflow checks a run request without zod, against the JSON Schema generated from the zod
 * schema the worker uses. The two must agree on every request: a rule the workflow's check lets
 * through is a rule only the worker enforces.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { runInputProblemOf } from '../../../src/shared/run-input-check.js';
import { RUN_INPUT_JSON_SCHEMA } from '../../../src/shared/run-input-json-schema.js';
import { runInputProblem, runInputSchema } from '../../../src/shared/run-input-schema.js';
import { testInput } from '../../helpers/run-input.js';

const valid = () =>
  testInput({
    repo: '/work/repo',
    model: 'scripted:x.json',
    base: 'main',
    temperature: 0.5,
    protect: ['a.txt'],
    requestedBy: { user: 'alice', tenant: 'acme', issuedAt: '2026-12-01T00:00:00Z', sig: 'a'.repeat(64) },
  }) as unknown as Record<string, unknown>;

/** one bad (or borderline) request per rule, and some good ones next to them */
const mutations: Array<[string, (r: Record<string, unknown>) => void]> = [
  ['valid as is', () => undefined],
  ['optional fields left out', (r) => ['base', 'temperature', 'protect', 'requestedBy'].forEach((k) => delete r[k])],
  ['unknown field', (r) => (r.frobnicate = 1)],
  ['two unknown fields', (r) => Object.assign(r, { a: 1, b: 2 })],
  ['missing required', (r) => delete r.goal],
  ['runId with a slash', (r) => (r.runId = 'a/b')],
  ['runId starting with a dot', (r) => (r.runId = '.a')],
  ['runId of 101 characters', (r) => (r.runId = 'a'.repeat(101))],
  ['runId of 100 characters', (r) => (r.runId = 'a'.repeat(100))],
  ['empty repo', (r) => (r.repo = '')],
  ['repo a number', (r) => (r.repo = 3)],
  ['goal too long', (r) => (r.goal = 'g'.repeat(100_001))],
  ['goal at the limit', (r) => (r.goal = 'g'.repeat(100_000))],
  ['a check empty', (r) => (r.checks = [''])],
  ['51 checks', (r) => (r.checks = Array.from({ length: 51 }, () => 'npm test'))],
  ['50 checks', (r) => (r.checks = Array.from({ length: 50 }, () => 'npm test'))],
  ['setup not an array', (r) => (r.setup = 'npm ci')],
  ['maxTokens zero', (r) => (r.maxTokens = 0)],
  ['maxTokens fractional', (r) => (r.maxTokens = 1.5)],
  ['maxTokens a string', (r) => (r.maxTokens = '4096')],
  ['maxTokens NaN', (r) => (r.maxTokens = Number.NaN)],
  ['maxTokens beyond a safe integer', (r) => (r.maxTokens = 2 ** 60)],
  ['temperature 2.5', (r) => (r.temperature = 2.5)],
  ['temperature 0', (r) => (r.temperature = 0)],
  ['sandbox none', (r) => (r.sandbox = 'none')],
  ['approvalMode yolo', (r) => (r.approvalMode = 'yolo')],
  ['allowTestEdits a string', (r) => (r.allowTestEdits = 'true')],
  ['budgets with an extra field', (r) => (r.budgets = { ...(r.budgets as object), maxCoffee: 1 })],
  ['budgets without maxUsd', (r) => (r.budgets = { maxTurns: 1, maxTokens: 1, maxWallMs: 1 })],
  ['budgets maxUsd negative', (r) => (r.budgets = { maxTurns: 1, maxTokens: 1, maxUsd: -1, maxWallMs: 1 })],
  ['budgets maxUsd 0', (r) => (r.budgets = { maxTurns: 1, maxTokens: 1, maxUsd: 0, maxWallMs: 1 })],
  ['budgets null', (r) => (r.budgets = null)],
  ['maxAttempts 11', (r) => (r.maxAttempts = 11)],
  ['maxAttempts 10', (r) => (r.maxAttempts = 10)],
  ['protect with an empty path', (r) => (r.protect = [''])],
  ['protect of 201 paths', (r) => (r.protect = Array.from({ length: 201 }, (_, i) => `p${i}`))],
  ['requestedBy with a short sig', (r) => (r.requestedBy = { user: 'a', tenant: 't', issuedAt: 'x', sig: 'abc' })],
  ['requestedBy with an extra field', (r) => (r.requestedBy = { user: 'a', tenant: 't', issuedAt: 'x', sig: 'a'.repeat(64), role: 'admin' })],
  ['requestedBy with an empty tenant', (r) => (r.requestedBy = { user: 'a', tenant: '', issuedAt: 'x', sig: 'a'.repeat(64) })],
  ['searchAttributes a number', (r) => (r.searchAttributes = 1)],
  ['an array', () => undefined],
];

describe("the workflow's check of a run request", () => {
  it('is generated from the zod schema (paste the printed text into src/shared/run-input-json-schema.ts when they differ)', () => {
    const generated = z.toJSONSchema(runInputSchema) as Record<string, unknown>;
    delete generated.$schema;
    expect(RUN_INPUT_JSON_SCHEMA, JSON.stringify(generated, null, 2)).toEqual(generated);
  });

  it.each(mutations)('agrees with the worker’s zod check: %s', (name, mutate) => {
    const r = valid();
    mutate(r);
    const input: unknown = name === 'an array' ? [r] : r;
    const zodSays = runInputProblem(input);
    const workflowSays = runInputProblemOf(input);
    expect(workflowSays === undefined, `zod: ${zodSays}; workflow: ${workflowSays}`).toBe(zodSays === undefined);
    // both name the same field
    const field = /^([\w.]+): /.exec(zodSays ?? '')?.[1];
    if (field !== undefined) expect(workflowSays).toMatch(new RegExp(`^${field.replace(/\./g, '\\.')}: `));
  });

  it('refuses, rather than passes, a schema keyword it does not know', async () => {
    const { RUN_INPUT_JSON_SCHEMA: schema } = await import('../../../src/shared/run-input-json-schema.js');
    const props = schema.properties as unknown as Record<string, Record<string, unknown>>;
    const before = props.goal;
    props.goal = { ...before, format: 'email' };
    try {
      expect(runInputProblemOf(valid())).toMatch(/^goal: the schema uses format/);
    } finally {
      props.goal = before!;
    }
  });
});
