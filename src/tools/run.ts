import { applyEdit } from './edit.js';
import { listFiles } from './list-files.js';
import type { ToolOutcome } from './outcome.js';
import { readFile } from './read-file.js';
import type { ParsedToolInput } from './schemas.js';
import { search } from './search.js';

export type FileToolCall = Extract<ParsedToolInput, { name: 'read_file' | 'list_files' | 'search' | 'edit' | 'create_file' }>;

export function isFileToolCall(call: ParsedToolInput): call is FileToolCall {
  return ['read_file', 'list_files', 'search', 'edit', 'create_file'].includes(call.name);
}

/**
 * Run a file tool that policy already allowed. run_command, update_plan and finish are
 * not file tools: the sandbox and the workflow handle them. Edits go through
 * prepareEdit/commitEdit when the caller needs crash idempotency; this does both at once.
 */
export async function runFileTool(workspace: string, call: FileToolCall): Promise<ToolOutcome> {
  switch (call.name) {
    case 'read_file':
      return readFile(workspace, call.value);
    case 'list_files':
      return listFiles(workspace, call.value);
    case 'search':
      return search(workspace, call.value);
    case 'edit':
      return applyEdit(workspace, 'edit', call.value);
    case 'create_file':
      return applyEdit(workspace, 'create_file', call.value);
  }
}
