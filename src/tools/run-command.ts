/*
 * run_command: a shell command in the sandbox. Its name and flags are in catalog.ts; this is the
 * rest of it. The activity runs it (ToolHost.command): the sandbox, the journal and what a retry
 * after a crash may do are the same for every command.
 */
import { z } from 'zod';
import { canonicalJson, sha256 } from '../policy/canonical.js';
import { judgeCommand } from '../policy/commands.js';
import { need } from '../policy/judging.js';
import type { CommandSegment } from '../policy/types.js';
import { defineTool } from './spec.js';

export const RUN_COMMAND_DEFAULT_TIMEOUT_MS = 120_000;
export const RUN_COMMAND_MAX_TIMEOUT_MS = 600_000;

/** The parser of what the model sends and, as JSON schema, what it is shown (schemas.ts). */
export const runCommandInput = z
  .strictObject({
    command: z.string().min(1).describe('Shell command, run with bash in the workspace root, e.g. "npm test -- auth".'),
    timeout_ms: z
      .number()
      .int()
      .min(1000)
      .max(RUN_COMMAND_MAX_TIMEOUT_MS)
      .default(RUN_COMMAND_DEFAULT_TIMEOUT_MS)
      .describe(`Kill the command after this many milliseconds. Default ${RUN_COMMAND_DEFAULT_TIMEOUT_MS}, max ${RUN_COMMAND_MAX_TIMEOUT_MS}.`),
    reason: z.string().trim().min(1).describe('Why this command is needed, in one sentence; shown to the person asked to approve it.'),
  })
  .describe(
    'Run a shell command in a sandbox: no network, only the workspace is writable, output is capped. ' +
      'Use it to run tests, builds and linters; some commands need approval. Do not use it to read or edit files: use the file tools.',
  );

export type RunCommandInput = z.output<typeof runCommandInput>;

/** The approval binding of a command: what runs (argv, wrappers, redirects), not how it was spaced. */
function commandHash(segments: readonly CommandSegment[]): string {
  return sha256(canonicalJson({ tool: 'run_command', segments: segments.map((s) => ({ argv: s.argv, via: s.via, redirects: s.redirects })) }));
}

export const runCommandTool = defineTool({
  schema: runCommandInput,
  judge: async (input, ctx) => {
    const c = need(input, 'command', 'run_command');
    if (typeof c !== 'string') return { verdict: c };
    const { verdict, segments } = await judgeCommand(c, ctx);
    return { verdict, extra: { segments, safeToRepeat: verdict.decision === 'allow' && verdict.safe === true, hash: commandHash(segments) } };
  },
  run: (host, v) => host.command(v.command, v.timeout_ms),
  summary: (v) => `run_command: ${v.command.slice(0, 160)}`,
});
