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
export { readFile, READ_MAX_BYTES, READ_MAX_LINES } from './read-file.js';
export { listFiles, listWorkspaceFiles, globMatcher, LIST_MAX_FILES } from './list-files.js';
export { search, searchMatches, SEARCH_MAX_SHOWN, SECRET_FILE_GLOBS, type SearchMatch, type SearchOptions, type SearchResult } from './search.js';
export { prepareEdit, commitEdit, applyEdit, fileHash, sha256, nearMatchHint, type PreparedEdit, type EditRequest, type EditToolName } from './edit.js';
