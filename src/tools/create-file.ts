/*
 * create_file: a new file of the workspace, written whole. Its name and flags are in catalog.ts;
 * this is the rest of it. It is made like an edit (edit.ts), journaled by the activity.
 */
import { z } from 'zod';
import { judgeFileWrite, str } from '../policy/judging.js';
import { relPath } from './fields.js';
import { defineTool } from './spec.js';

/** The parser of what the model sends and, as JSON schema, what it is shown (schemas.ts). */
export const createFileInput = z
  .strictObject({
    path: relPath,
    content: z.string().describe('Full content of the new file.'),
  })
  .describe('Create a NEW file (parent directories are created). Fails if the file exists: use edit to change existing files.');

export type CreateFileInput = z.output<typeof createFileInput>;

export const createFileTool = defineTool({
  schema: createFileInput,
  judge: async (input, ctx) => ({ verdict: await judgeFileWrite('create_file', input, ctx, () => str(input, 'content') ?? '') }),
  run: (host, v) => host.edit('create_file', v),
  summary: (v) => `create_file ${v.path}`,
});
