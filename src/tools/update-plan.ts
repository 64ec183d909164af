/*
 * update_plan: the model's plan and its progress, shown in the live view and the Web UI. Its name
 * and flags are in catalog.ts; this is the rest of it.
 */
import { z } from 'zod';
import { allow, deny } from '../policy/verdict.js';
import { redact } from '../redact/index.js';
import { defineTool } from './spec.js';

export const PLAN_STATUSES = ['pending', 'in_progress', 'done'] as const;

/** The parser of what the model sends and, as JSON schema, what it is shown (schemas.ts). */
export const updatePlanInput = z
  .strictObject({
    steps: z
      .array(
        z.strictObject({
          step: z.string().trim().min(1).describe('What this step does, one short sentence.'),
          status: z.enum(PLAN_STATUSES),
        }),
      )
      .min(1)
      .max(30)
      .describe('The whole plan, 1 to 30 steps, in order; it replaces the previous plan.'),
  })
  .describe(
    'Record your plan and progress. Send the full list each time; keep at most one step in_progress. ' +
      'Call it first with your plan and again when a step is done.',
  );

export type UpdatePlanInput = z.output<typeof updatePlanInput>;

export const updatePlanTool = defineTool({
  schema: updatePlanInput,
  judge: (input) => {
    if (!Array.isArray(input.steps)) return { verdict: deny('input.invalid', 'update_plan needs "steps" as an array.') };
    return { verdict: allow('tool.plan', 'Updating the plan changes nothing on disk.', true) };
  },
  run: (host, v) => {
    const plan = v.steps.map((s) => ({ step: redact(s.step).slice(0, 200), status: s.status }));
    const text = `Plan updated (${plan.filter((s) => s.status === 'done').length}/${plan.length} done).`;
    return host.record(text, { summary: text, plan });
  },
  summary: (v) => `update_plan (${v.steps.length} steps)`,
});
