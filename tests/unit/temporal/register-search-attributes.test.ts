import { describe, expect, it } from 'vitest';
import { OperatorApiUnavailableError, registerSearchAttributes, SearchAttributePermissionError } from '../../../src/temporal/register-search-attributes.js';
import { ensureSearchAttributes } from '../../../src/worker.js';

/** An operator service that holds attributes like a server; `deny` answers like an authorizer that refuses. */
function fakeServer(initial: Record<string, number>, o: { deny?: 'list' | 'add'; raceAdd?: boolean; unimplemented?: 'list' | 'add' } = {}) {
  const attrs = { ...initial };
  const adds: string[][] = [];
  const denied = Object.assign(new Error('Request unauthorized.'), { code: 7 });
  const unimplemented = Object.assign(new Error('unknown service temporal.api.operatorservice.v1.OperatorService'), { code: 12 });
  return {
    attrs,
    adds,
    operatorService: {
      async listSearchAttributes() {
        if (o.deny === 'list') throw denied;
        if (o.unimplemented === 'list') throw unimplemented;
        return { customAttributes: { ...attrs } };
      },
      async addSearchAttributes(req: { searchAttributes?: Record<string, number> | null }) {
        if (o.deny === 'add') throw denied;
        if (o.unimplemented === 'add') throw unimplemented;
        const names = Object.keys(req.searchAttributes ?? {});
        adds.push(names);
        Object.assign(attrs, req.searchAttributes);
        if (o.raceAdd) throw Object.assign(new Error('Search attribute KilnPhase already exists.'), { code: 3 });
        return {};
      },
    },
  } as never as { attrs: Record<string, number>; adds: string[][]; operatorService: never };
}

describe("registering Kiln's search attributes", () => {
  it('adds only the missing ones, with their types; a second call adds nothing', async () => {
    const s = fakeServer({ KilnPhase: 2, KilnRepo: 2 });
    const r = await registerSearchAttributes(s, 'default');
    expect(r.added.sort()).toEqual(['KilnApprovers', 'KilnBudgetShare', 'KilnTenant', 'KilnTouched', 'KilnWaitingSince']);
    expect(r.present).toEqual(['KilnPhase', 'KilnRepo']);
    // KeywordList 7, Double 4, Datetime 6 (temporal.api.enums.v1.IndexedValueType)
    expect(s.attrs).toMatchObject({ KilnTouched: 7, KilnApprovers: 7, KilnBudgetShare: 4, KilnWaitingSince: 6, KilnTenant: 2 });
    expect((await registerSearchAttributes(s, 'default')).added).toEqual([]);
    expect(s.adds).toHaveLength(1);
  });

  it('another worker adding them at the same moment is not an error', async () => {
    const s = fakeServer({}, { raceAdd: true });
    await expect(registerSearchAttributes(s, 'default')).resolves.toMatchObject({ added: expect.arrayContaining(['KilnPhase']) });
  });

  it('without the permission: a clear error naming the commands an admin must run', async () => {
    for (const deny of ['list', 'add'] as const) {
      const err = await registerSearchAttributes(fakeServer({ KilnPhase: 2 }, { deny }), 'team').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(SearchAttributePermissionError);
      expect((err as Error).message).toMatch(/may not register Kiln's search attributes in namespace team \(permission denied\)/);
      expect((err as Error).message).toContain('temporal operator search-attribute create --namespace team --name KilnTouched --type KeywordList');
    }
  });

  it('a server without the operator API (UNIMPLEMENTED): a clear error of its own, not a failure to start', async () => {
    for (const where of ['list', 'add'] as const) {
      const err = await registerSearchAttributes(fakeServer({ KilnPhase: 2 }, { unimplemented: where }), 'team').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(OperatorApiUnavailableError);
      expect((err as Error).message).toMatch(/does not offer the operator API \(unimplemented\).*namespace team: runs work/);
      expect((err as Error).message).toContain('temporal operator search-attribute create --namespace team --name KilnTouched --type KeywordList');
    }
  });

  it("the worker's start-up line: NOT REGISTERED with the reason when refused or unimplemented; any other error still stops it", async () => {
    expect(await ensureSearchAttributes(fakeServer({}, { unimplemented: 'list' }), 'team')).toMatch(
      /^search attributes: NOT REGISTERED — this server does not offer the operator API/,
    );
    expect(await ensureSearchAttributes(fakeServer({}, { deny: 'add' }), 'team')).toMatch(/^search attributes: NOT REGISTERED — this client may not register/);
    // control: a server that allows it
    expect(await ensureSearchAttributes(fakeServer({}), 'team')).toMatch(/^search attributes: added KilnPhase/);
    const broken = {
      operatorService: {
        listSearchAttributes: async () => {
          throw Object.assign(new Error('connection refused'), { code: 14 });
        },
      },
    } as never;
    await expect(ensureSearchAttributes(broken, 'team')).rejects.toThrow('connection refused');
  });
});
