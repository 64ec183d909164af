// The eslint rule behind the layer table in eslint.config.js. Built-in no-restricted-imports
// matches an import's text, and one folder is spelled '../x' from src/cli/ but '../../x' from
// src/cli/commands/: this rule resolves the path first and compares folders of src/.
import { dirname, isAbsolute, relative, resolve, sep } from 'node:path';

/** Where a file sits in src/: its folder ('.' for src/ itself) and its path without extension. */
function place(src, file) {
  const rel = relative(src, file);
  if (rel === '' || rel.startsWith('..') || isAbsolute(rel)) return undefined;
  const parts = rel.split(sep);
  return { folder: parts.length > 1 ? parts[0] : '.', path: parts.join('/').replace(/\.[cm]?[jt]sx?$/, '') };
}

/** An entry names a folder ('tools'), a folder inside one ('tools/x'), one file ('tools/catalog') or all ('*'). */
const covers = (entries, target) => entries.some((e) => e === '*' || e === target.folder || target.path === e || target.path.startsWith(`${e}/`));

/** `import type`, `export type`, or every named binding marked `type`: erased when compiled. */
function typeOnly(node) {
  if (node.importKind === 'type' || node.exportKind === 'type' || node.type === 'TSImportType') return true;
  const specs = node.specifiers ?? [];
  return specs.length > 0 && specs.every((s) => s.importKind === 'type' || s.exportKind === 'type');
}

function sourceOf(node) {
  if (node.type === 'TSImportType') return node.source ?? node.argument?.literal;
  return node.source;
}

const rule = {
  meta: {
    type: 'problem',
    docs: { description: 'a folder of src/ imports only the folders its row of the layer table names' },
    schema: [
      {
        type: 'object',
        properties: { src: { type: 'string' }, layers: { type: 'array' } },
        required: ['src', 'layers'],
        additionalProperties: false,
      },
    ],
    messages: {
      backArrow: '{{from}} may not import {{to}} ({{target}}): see the layer table in eslint.config.js.',
      noRow: '{{from}} has no row in the layer table in eslint.config.js: give it one, with what it may import.',
    },
  },
  create(context) {
    const { src, layers } = context.options[0];
    const here = place(src, context.filename);
    if (!here) return {};
    const from = here.folder === '.' ? 'src/ (its top-level files)' : `src/${here.folder}`;
    const row = layers.find((l) => l.folder === here.folder);
    if (!row) {
      return {
        Program(node) {
          context.report({ node, messageId: 'noRow', data: { from } });
        },
      };
    }
    const allowed = [...row.mayImport, ...(row.except ?? []).filter((x) => x.files.includes(here.path)).flatMap((x) => x.mayImport)];
    const check = (node) => {
      const source = sourceOf(node);
      if (typeof source?.value !== 'string' || !source.value.startsWith('.')) return;
      const target = place(src, resolve(dirname(context.filename), source.value));
      if (!target || target.folder === here.folder || (covers(allowed, target) && !covers(row.but ?? [], target))) return;
      if (typeOnly(node) && covers(row.types ?? [], target)) return;
      const to = target.folder === '.' ? `src/${target.path}` : `src/${target.folder}`;
      context.report({ node: source, messageId: 'backArrow', data: { from, to, target: target.path } });
    };
    return {
      ImportDeclaration: check,
      ExportNamedDeclaration: check,
      ExportAllDeclaration: check,
      ImportExpression: check,
      TSImportType: check,
    };
  },
};

export const layersPlugin = { rules: { layers: rule } };
