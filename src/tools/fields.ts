import { z } from 'zod';

/** The input field of every tool that names a file: one description, so each tool shows it alike. */
export const relPath = z.string().min(1).describe('Path relative to the workspace root, e.g. "src/auth/login.ts". No absolute paths, no "..".');
