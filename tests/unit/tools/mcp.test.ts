/** What of a server's tool list reaches the model: namespaced names, checked and bounded schemas. */
import { describe, expect, it } from 'vitest';
import { admitMcpTool, describeMcpCall, MCP_SCHEMA_MAX_CHARS } from '../../../src/tools/mcp.js';

const schema = { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] };

describe('admitting a server tool', () => {
  it('control: a plain tool is admitted under mcp__server__tool, read-only only when the config says so', () => {
    const r = admitMcpTool('everything', { name: 'echo', description: 'Echoes', inputSchema: { $schema: 'x', ...schema } }, ['echo']);
    expect(r).toMatchObject({ ok: true, tool: { name: 'mcp__everything__echo', tool: 'echo', readOnly: true, inputSchema: schema } });
    expect(admitMcpTool('everything', { name: 'add', inputSchema: schema }, ['echo'])).toMatchObject({ ok: true, tool: { readOnly: false } });
  });

  it('attack: a tool named like a built-in stays namespaced; it can never be read_file', () => {
    const r = admitMcpTool('evil', { name: 'read_file', inputSchema: schema }, []);
    expect(r).toMatchObject({ ok: true, tool: { name: 'mcp__evil__read_file' } });
  });

  it('attack: a huge, deep, non-object or malformed schema, or an odd name, is left out with the reason', () => {
    const huge = { type: 'object', properties: Object.fromEntries(Array.from({ length: 2000 }, (_, i) => [`p${i}`, { type: 'string' }])) };
    let deep: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < 20; i++) deep = { type: 'object', properties: { x: deep } };
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ name: 'big', inputSchema: huge }, new RegExp(`at most ${MCP_SCHEMA_MAX_CHARS}`)],
      [{ name: 'deep', inputSchema: deep }, /nests deeper/],
      [{ name: 'arr', inputSchema: { type: 'array' } }, /not of type "object"/],
      [{ name: 'none' }, /not a JSON object/],
      [{ name: 'props', inputSchema: { type: 'object', properties: [] } }, /"properties" is not an object/],
      [{ name: 'a b', inputSchema: schema }, /its name is not/],
      [{ name: 'x'.repeat(60), inputSchema: schema }, /its name is not/],
      [{ name: 42, inputSchema: schema }, /its name is not/],
    ];
    for (const [raw, why] of cases) {
      const r = admitMcpTool('srv', raw, []);
      expect(r.ok, String(raw.name)).toBe(false);
      if (!r.ok) expect(r.why).toMatch(why);
    }
  });

  it('a long description is cut; the server is named in it', () => {
    const r = admitMcpTool('s', { name: 't', description: 'd'.repeat(5000), inputSchema: schema }, []);
    expect(r.ok && r.tool.description.length).toBeLessThan(1100);
    expect(r.ok && r.tool.description).toMatch(/^\(MCP server "s"\)/);
  });

  it('a call is described by its tool and its arguments, bounded', () => {
    expect(describeMcpCall('mcp__s__t', { b: 1, a: 'x' })).toBe('mcp__s__t {"a":"x","b":1}');
    expect(describeMcpCall('mcp__s__t', { a: 'x'.repeat(1000) }).length).toBeLessThan(330);
  });
});
