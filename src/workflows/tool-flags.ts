/**
 * The few facts about tools the workflow branches on, in one place so the tool registry in
 * src/tools can replace this file with one import (the workflow may read only its pure parts).
 */

/** Tools that only look: a turn's leading run of them is executed in one activity, and calling only these keeps an attempt in `planning`. */
export const READ_ONLY_TOOLS: ReadonlySet<string> = new Set(['read_file', 'list_files', 'search', 'update_plan']);
/** Tools that change files: in a retry they wait for a reflection first. */
export const EDIT_TOOLS: ReadonlySet<string> = new Set(['edit', 'create_file']);
/** The model's way to end an attempt; the stop gate may refuse it. */
export const FINISH_TOOL = 'finish';
/** The structured reflection a retry must start with. */
export const REFLECT_TOOL = 'reflect';
