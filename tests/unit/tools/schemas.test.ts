import { describe, expect, it } from 'vitest';
import { TOOL_NAMES } from '../../../src/tools/catalog.js';
import { parseToolInput, toolDefinitions } from '../../../src/tools/schemas.js';

describe('toolDefinitions', () => {
  const defs = toolDefinitions();

  it('defines every tool once, in TOOL_NAMES order, with an object schema', () => {
    expect(defs.map((d) => d.name)).toEqual([...TOOL_NAMES]);
    for (const d of defs) {
      expect(d.description.length).toBeGreaterThan(30);
      expect(d.input_schema.type).toBe('object');
      expect(typeof d.input_schema.properties).toBe('object');
      expect(JSON.stringify(d.input_schema)).not.toContain('$schema');
      expect(JSON.stringify(d.input_schema)).not.toContain('additionalProperties');
    }
  });

  it('marks the fields the model must send as required, and only those', () => {
    const req = Object.fromEntries(defs.map((d) => [d.name, d.input_schema.required ?? []]));
    expect(req).toEqual({
      read_file: ['path'],
      list_files: [],
      search: ['pattern'],
      edit: ['path', 'old_string', 'new_string'],
      create_file: ['path', 'content'],
      run_command: ['command', 'reason'],
      update_plan: ['steps'],
      reflect: ['attempt', 'last_failure', 'last_cause', 'this_fix', 'rationale', 'changed_files'],
      finish: ['summary'],
    });
  });

  it('carries defaults, enums and limits the model can see', () => {
    const byName = Object.fromEntries(defs.map((d) => [d.name, d.input_schema.properties as Record<string, any>]));
    expect(byName.search!.case.enum).toEqual(['sensitive', 'insensitive', 'smart']);
    expect(byName.search!.case.default).toBe('smart');
    expect(byName.run_command!.timeout_ms.maximum).toBe(600000);
    expect(byName.run_command!.timeout_ms.default).toBe(120000);
    expect(byName.update_plan!.steps.maxItems).toBe(30);
    expect(byName.update_plan!.steps.items.properties.status.enum).toEqual(['pending', 'in_progress', 'done']);
    expect(byName.edit!.old_string.description).toMatch(/exactly once/);
  });
});

describe('parseToolInput', () => {
  it('fills defaults', () => {
    const r = parseToolInput('search', { pattern: 'foo' });
    expect(r).toEqual({ ok: true, name: 'search', value: { pattern: 'foo', regex: false, case: 'smart' } });
    const c = parseToolInput('run_command', { command: 'npm test', reason: 'run tests' });
    expect(c.ok && c.name === 'run_command' && c.value.timeout_ms).toBe(120000);
  });

  it('lists the available tools for an unknown name', () => {
    const r = parseToolInput('write_file', { path: 'a' });
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.error).toContain('Unknown tool "write_file"');
      expect(r.error).toContain('read_file, list_files, search, edit, create_file');
    }
  });

  it('names each bad field and what was expected', () => {
    const r = parseToolInput('edit', { path: 'a.ts', old_string: 'x', replaceAll: true, new_string: 3 });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error).toContain('new_string: expected string, got number 3');
    expect(r.error).toContain('unknown field "replaceAll"');
    expect(r.error).toContain('required: path, old_string, new_string');
  });

  it('reports missing fields, bad enums, empty reason and too-large timeouts', () => {
    const missing = parseToolInput('read_file', {});
    expect(!missing.ok && missing.error).toContain('path: missing (expected string)');
    const plan = parseToolInput('update_plan', { steps: [{ step: 'a', status: 'started' }] });
    expect(!plan.ok && plan.error).toContain('steps[0].status: expected one of "pending", "in_progress", "done"');
    const reason = parseToolInput('run_command', { command: 'ls', reason: '   ' });
    expect(!reason.ok && reason.error).toContain('reason: must not be empty');
    const timeout = parseToolInput('run_command', { command: 'ls', reason: 'x', timeout_ms: 700000 });
    expect(!timeout.ok && timeout.error).toContain('timeout_ms: must be <= 600000');
    const tooMany = parseToolInput('update_plan', { steps: Array.from({ length: 31 }, () => ({ step: 's', status: 'done' })) });
    expect(!tooMany.ok && tooMany.error).toContain('steps: at most 30 items');
  });

  it('rejects a non-object input', () => {
    const r = parseToolInput('finish', 'done');
    expect(!r.ok && r.error).toContain('input: expected object, got the string "done"');
  });
});

describe('toolDefinitions is made once and shared', () => {
  it('a second call gives the very same definitions, and none of them can be changed by a caller', () => {
    const first = toolDefinitions();
    expect(toolDefinitions()).toBe(first);
    // a caller that added a key (a cache breakpoint) would change every later request's tools
    expect(() => {
      (first[0] as { cache_control?: unknown }).cache_control = { type: 'ephemeral' };
    }).toThrow(TypeError);
    expect(() => {
      (first[0]!.input_schema.properties as Record<string, unknown>).extra = {};
    }).toThrow(TypeError);
    expect('cache_control' in first[0]!).toBe(false);
  });

  it('control: another list of names gets its own definitions, in the order asked', () => {
    const some = toolDefinitions(['search', 'read_file']);
    expect(some.map((d) => d.name)).toEqual(['search', 'read_file']);
    expect(toolDefinitions(['search', 'read_file'])).toBe(some);
    expect(toolDefinitions(['read_file', 'search']).map((d) => d.name)).toEqual(['read_file', 'search']);
  });
});
