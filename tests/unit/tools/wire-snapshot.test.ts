import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { toolDefinitions } from '../../../src/tools/schemas.js';

/*
 * The tool definitions are part of every model request: a byte that moves breaks the
 * prompt cache and makes recorded runs see a different request. The fixture was written
 * from the code before the tool registry existed; regenerate it only on purpose.
 */
const fixture = readFileSync(new URL('./fixtures/tool-definitions.json', import.meta.url), 'utf8');

describe('tool definitions sent to the model', () => {
  it('serialise byte for byte as recorded', () => {
    // compact JSON is what the SDK puts on the wire; the fixture is pretty-printed to be read
    expect(JSON.stringify(toolDefinitions())).toBe(JSON.stringify(JSON.parse(fixture)));
    expect(JSON.stringify(toolDefinitions(), null, 2) + '\n').toBe(fixture);
  });

  it('keep their order when a subset is asked for', () => {
    const all = JSON.parse(fixture) as Array<{ name: string }>;
    const subset = toolDefinitions(['search', 'read_file']);
    expect(JSON.stringify(subset)).toBe(JSON.stringify([all[2], all[0]]));
  });
});
