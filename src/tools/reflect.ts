/*
 * reflect: what a retry owes before anything else, why the last attempt failed and what changes
 * now; kept in the decision log. Its name and flags are in catalog.ts (the workflow's reflection
 * gate asks for them); this is the rest of it.
 */
import { z } from 'zod';
import { allow } from '../policy/verdict.js';
import { redact } from '../redact/index.js';
import { defineTool } from './spec.js';

/** The parser of what the model sends and, as JSON schema, what it is shown (schemas.ts). */
export const reflectInput = z
  .strictObject({
    attempt: z.number().int().min(1).describe('The attempt you are starting now (2 for the first retry).'),
    last_failure: z.string().trim().min(1).describe('What failed last time, as the verifier reported it.'),
    last_cause: z.string().trim().min(1).describe('Why it failed: the cause in the code, not the symptom.'),
    this_fix: z.string().trim().min(1).describe('What you will change now.'),
    rationale: z.string().trim().min(1).describe('Why that change fixes the cause.'),
    changed_files: z.array(z.string().min(1)).describe('The files you expect to change in this attempt.'),
  })
  .describe('Before any edit in a retry, reflect on the failed attempt. Required once per retry; edits are refused until a valid reflection is given.');

export type ReflectInput = z.output<typeof reflectInput>;

export const reflectTool = defineTool({
  schema: reflectInput,
  judge: () => ({
    verdict: allow('tool.reflect', 'A reflection is recorded in the decision log; it changes nothing on disk.', true),
  }),
  run: async (host, v) => {
    await host.logDecision({ type: 'reflection', valid: true, ...v });
    return host.record(`Reflection recorded for attempt ${v.attempt}. Go ahead with the fix.`, { summary: `reflect: ${redact(v.this_fix).slice(0, 200)}` });
  },
  summary: (v) => `reflect (attempt ${v.attempt})`,
});
