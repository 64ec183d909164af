/*
 * Every tool, one spec each, in its own file. To add a tool: its name and flags in catalog.ts,
 * its file here (schema and description, judge, run, summary) — the compiler refuses a catalog
 * name without a spec, and a spec without a judge.
 */
import type { ToolName } from './catalog.js';
import { createFileTool } from './create-file.js';
import { editTool } from './edit.js';
import { finishTool } from './finish.js';
import { listFilesTool } from './list-files.js';
import { readFileTool } from './read-file.js';
import { reflectTool } from './reflect.js';
import { runCommandTool } from './run-command.js';
import { searchTool } from './search.js';
import type { ToolSpec } from './spec.js';
import { updatePlanTool } from './update-plan.js';

export const TOOLS = {
  read_file: readFileTool,
  list_files: listFilesTool,
  search: searchTool,
  edit: editTool,
  create_file: createFileTool,
  run_command: runCommandTool,
  update_plan: updatePlanTool,
  reflect: reflectTool,
  finish: finishTool,
} as const satisfies ToolRegistry;

/** A spec for every catalog name, and nothing else. */
export type ToolRegistry = { readonly [N in ToolName]: ToolSpec };
