/** Every request body and query `kiln serve` takes: validated here, and the OpenAPI document is generated from the same schemas. */
import { z } from 'zod';

const ID = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,100}$/, 'letters, digits, ".", "_" or "-"');

export const CreateRun = z
  .object({
    repo: z.string().min(1).describe('absolute path of a git repository the tenant was given'),
    goal: z.string().trim().min(1).max(20_000).describe('what the change should achieve'),
    model: z.string().min(1).max(500).optional().describe('a model name, or scripted:FILE for a scripted (not real) model'),
    checks: z.array(z.string().min(1).max(2000)).max(20).optional(),
    setup: z.array(z.string().min(1).max(2000)).max(20).optional(),
    base: z.string().min(1).max(200).optional().describe('the commit to start from (default HEAD)'),
    approvalMode: z.enum(['strict', 'default', 'auto']).optional(),
    sandbox: z.enum(['bwrap', 'off']).optional(),
    allowTestEdits: z.boolean().optional(),
    unverified: z.boolean().optional(),
    review: z.enum(['off', 'on', 'required']).optional().describe('an independent model review of the verified patch before it succeeds (default off)'),
    reviewModel: z.string().min(1).max(500).optional().describe("the reviewer's model (default: the run's)"),
    attempts: z.number().int().min(1).max(8).optional().describe('parallel attempts: this many child runs at once, the first to succeed wins'),
    attemptModels: z.array(z.string().min(1).max(500)).max(8).optional().describe("the parallel attempts' models, in turn"),
    maxUsd: z.number().positive().max(10_000).optional().describe("the run's cost budget in USD (reserved against the tenant's day while it runs)"),
    maxTurns: z.number().int().positive().max(10_000).optional(),
    maxWall: z.string().max(20).optional().describe('a duration like 30m or 2h'),
    approvalTimeout: z.string().max(20).optional(),
  })
  .strict();
export type CreateRun = z.infer<typeof CreateRun>;

export const ListRuns = z
  .object({
    phase: z.string().optional(),
    repo: z.string().optional(),
    waitingLongerThan: z.string().optional(),
    overBudget: z.string().optional(),
    touched: z.string().optional(),
    approver: z.string().optional(),
    limit: z.coerce.number().int().positive().max(500).optional(),
  })
  .strict();

export const Decide = z
  .object({
    decision: z.enum(['approve', 'reject']),
    scope: z
      .enum(['once', 'run'])
      .optional()
      .describe('"run": allow this kind of call for the rest of the run (refused, 400, for a call that needs several approvers)'),
    reason: z.string().trim().min(1).max(2000).optional().describe("a rejection's reason goes back to the model"),
  })
  .strict();

export const Human = z
  .object({
    action: z.enum(['hint', 'accept', 'abandon']),
    text: z.string().trim().min(1).max(20_000).optional().describe('the hint (required for hint)'),
  })
  .strict()
  .refine((h) => h.action !== 'hint' || h.text !== undefined, { message: 'a hint needs text', path: ['text'] });

export const Cancel = z.object({ reason: z.string().trim().min(1).max(2000).optional() }).strict();

export const ErrorBody = z.object({
  error: z.string().describe('a machine-readable code'),
  message: z.string().describe('what went wrong and what to do'),
  field: z.string().optional().describe('the request field that is wrong'),
  resetsAt: z.string().optional(),
});

export const RunSummary = z.object({
  runId: z.string(),
  status: z.string(),
  phase: z.string().optional(),
  repo: z.string().optional(),
  startedAt: z.string().optional(),
  closedAt: z.string().optional(),
  startedBy: z.string().optional(),
});

export const PathIds = { runId: ID, approvalId: z.string().min(1).max(200) };
