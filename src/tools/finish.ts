/*
 * finish: the model's word that the task is done. Its name and flags are in catalog.ts: it ends
 * the attempt, so the workflow's stop gate and the verifier answer it; this is the rest of it.
 */
import { z } from 'zod';
import { allow, deny } from '../policy/verdict.js';
import { redact } from '../redact/index.js';
import { defineTool } from './spec.js';

/** The parser of what the model sends and, as JSON schema, what it is shown (schemas.ts). */
export const finishInput = z
  .strictObject({
    summary: z.string().trim().min(1).describe('What you changed and why, and how you checked it (commands run, their result).'),
  })
  .describe(
    'Declare the task done. Only accepted after the checks were run since your last edit; verification then runs the project checks ' +
      'and may send you back with the failures.',
  );

export type FinishInput = z.output<typeof finishInput>;

export const finishTool = defineTool({
  schema: finishInput,
  judge: (input) => {
    if (typeof input.summary !== 'string') return { verdict: deny('input.invalid', 'finish needs "summary" as a string.') };
    return { verdict: allow('tool.finish', 'Finishing is judged by the stop gate and the verifier, not by policy.', true) };
  },
  // the workflow ends the attempt on finish; this only answers a call that reached an activity
  run: (host) => host.record('finish is handled by the workflow', { summary: 'finish is handled by the workflow' }),
  // the model's own account of the work: the live view and the Web UI show it
  summary: (v) => `finish: ${redact(v.summary.replace(/\s+/g, ' ')).slice(0, 300)}`,
});
