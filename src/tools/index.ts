export {
  TOOL_CATALOG,
  TOOL_NAMES,
  READ_ONLY_TOOLS,
  EDIT_TOOLS,
  COMMAND_TOOLS,
  REFLECTION_TOOLS,
  ATTEMPT_ENDING_TOOLS,
  isToolName,
  type ToolName,
  type ToolFlags,
} from './catalog.js';
export { TOOLS, type ToolRegistry } from './registry.js';
export { defineTool, type ToolHost, type ToolSpec } from './spec.js';
export { describeCall, runToolCall } from './dispatch.js';
export { evaluate, runPolicyCases } from './evaluate.js';
export * from './schemas.js';
export { capText, type ToolOutcome } from './outcome.js';
export {
  WorkspacePathError,
  isInside,
  workspaceTarget,
  safeReadFile,
  safeWriteFile,
  entryKind,
  workspaceRealpath,
  type PathErrorCode,
  type WorkspaceTarget,
  type ReadResult,
  type WriteOptions,
  type EntryKind,
} from './safe-fs.js';
export { readFile, readFileInput, READ_MAX_BYTES, READ_MAX_LINES, type ReadFileInput } from './read-file.js';
export { listFiles, listFilesInput, listWorkspaceFiles, globMatcher, LIST_MAX_FILES, type ListFilesInput } from './list-files.js';
export {
  search,
  searchInput,
  searchMatches,
  SEARCH_MAX_SHOWN,
  SECRET_FILE_GLOBS,
  type SearchInput,
  type SearchMatch,
  type SearchOptions,
  type SearchResult,
} from './search.js';
export {
  prepareEdit,
  commitEdit,
  applyEdit,
  fileHash,
  sha256,
  nearMatchHint,
  editInput,
  type EditInput,
  type PreparedEdit,
  type EditRequest,
  type EditToolName,
} from './edit.js';
export { createFileInput, type CreateFileInput } from './create-file.js';
export { runCommandInput, RUN_COMMAND_DEFAULT_TIMEOUT_MS, RUN_COMMAND_MAX_TIMEOUT_MS, type RunCommandInput } from './run-command.js';
export { updatePlanInput, PLAN_STATUSES, type UpdatePlanInput } from './update-plan.js';
export { reflectInput, type ReflectInput } from './reflect.js';
export { finishInput, type FinishInput } from './finish.js';
export { admitMcpTool, mcpDefinitions, describeMcpCall, MCP_TOOLS_PER_SERVER, type McpToolInfo } from './mcp.js';
