/*
 * Every tool, one spec each. To add a tool: its name and flags in catalog.ts, its spec here —
 * the compiler refuses a catalog name without a spec, and a spec without a judge.
 */
import {
  judgeCreateFile,
  judgeEdit,
  judgeFinish,
  judgeListFiles,
  judgeReadFile,
  judgeReflect,
  judgeRunCommand,
  judgeSearch,
  judgeUpdatePlan,
} from '../policy/tool-judges.js';
import { redact } from '../redact/index.js';
import type { ToolName } from './catalog.js';
import {
  createFileInput,
  editInput,
  finishInput,
  listFilesInput,
  readFileInput,
  reflectInput,
  runCommandInput,
  searchInput,
  updatePlanInput,
} from './inputs.js';
import { listFiles } from './list-files.js';
import { readFile } from './read-file.js';
import { search } from './search.js';
import { defineTool, type ToolSpec } from './spec.js';

export const TOOLS = {
  read_file: defineTool({
    schema: readFileInput,
    judge: judgeReadFile,
    run: async (host, v) => host.result(await readFile(host.workspace, v)),
    summary: (v) => `read_file ${v.path}${v.start_line ? `:${v.start_line}-${v.end_line ?? ''}` : ''}`,
  }),
  list_files: defineTool({
    schema: listFilesInput,
    judge: judgeListFiles,
    run: async (host, v) => host.result(await listFiles(host.workspace, v)),
    summary: (v) => `list_files ${v.glob ?? ''}`.trim(),
  }),
  search: defineTool({
    schema: searchInput,
    judge: judgeSearch,
    run: async (host, v) => host.result(await search(host.workspace, v)),
    summary: (v) => `search "${v.pattern.slice(0, 60)}"${v.path_glob ? ` in ${v.path_glob}` : ''}`,
  }),
  edit: defineTool({
    schema: editInput,
    judge: judgeEdit,
    run: (host, v) => host.edit('edit', v),
    summary: (v) => `edit ${v.path}`,
  }),
  create_file: defineTool({
    schema: createFileInput,
    judge: judgeCreateFile,
    run: (host, v) => host.edit('create_file', v),
    summary: (v) => `create_file ${v.path}`,
  }),
  run_command: defineTool({
    schema: runCommandInput,
    judge: judgeRunCommand,
    run: (host, v) => host.command(v.command, v.timeout_ms),
    summary: (v) => `run_command: ${v.command.slice(0, 160)}`,
  }),
  update_plan: defineTool({
    schema: updatePlanInput,
    judge: judgeUpdatePlan,
    run: (host, v) => {
      const plan = v.steps.map((s) => ({ step: redact(s.step).slice(0, 200), status: s.status }));
      const text = `Plan updated (${plan.filter((s) => s.status === 'done').length}/${plan.length} done).`;
      return host.record(text, { summary: text, plan });
    },
    summary: (v) => `update_plan (${v.steps.length} steps)`,
  }),
  reflect: defineTool({
    schema: reflectInput,
    judge: judgeReflect,
    run: async (host, v) => {
      await host.logDecision({ type: 'reflection', valid: true, ...v });
      return host.record(`Reflection recorded for attempt ${v.attempt}. Go ahead with the fix.`, { summary: `reflect: ${redact(v.this_fix).slice(0, 200)}` });
    },
    summary: (v) => `reflect (attempt ${v.attempt})`,
  }),
  finish: defineTool({
    schema: finishInput,
    judge: judgeFinish,
    // the workflow ends the attempt on finish; this only answers a call that reached an activity
    run: (host) => host.record('finish is handled by the workflow', { summary: 'finish is handled by the workflow' }),
    // the model's own account of the work: the live view and the Web UI show it
    summary: (v) => `finish: ${redact(v.summary.replace(/\s+/g, ' ')).slice(0, 300)}`,
  }),
} as const satisfies ToolRegistry;

/** A spec for every catalog name, and nothing else. */
export type ToolRegistry = { readonly [N in ToolName]: ToolSpec };
