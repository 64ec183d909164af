export const TOOL_NAMES = [
  'read_file',
  'list_files',
  'search',
  'edit',
  'create_file',
  'run_command',
  'update_plan',
  'reflect',
  'finish',
] as const;
export type ToolName = (typeof TOOL_NAMES)[number];

export function isToolName(name: string): name is ToolName {
  return (TOOL_NAMES as readonly string[]).includes(name);
}
