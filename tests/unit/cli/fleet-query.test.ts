import { describe, expect, it } from 'vitest';
import { fleetQuery } from '../../../src/client/fleet-query.js';

const now = new Date('2026-12-01T12:00:00.000Z');

describe('kiln list filters as visibility queries', () => {
  it('no filter: every Kiln run', () => {
    expect(fleetQuery({}, now)).toBe("WorkflowType = 'kilnRun'");
  });

  it('each filter becomes one clause on its search attribute, all ANDed', () => {
    expect(
      fleetQuery({ phase: 'awaiting_approval', repo: '/src/app', waitingLongerThan: '30m', overBudget: '80%', touched: './src/auth.ts', approver: 'ana' }, now),
    ).toBe(
      "WorkflowType = 'kilnRun' AND KilnPhase = 'awaiting_approval' AND KilnRepo = '/src/app' AND KilnWaitingSince < '2026-12-01T11:30:00.000Z'" +
        " AND KilnBudgetShare >= 0.8 AND KilnTouched = 'src/auth.ts' AND KilnApprovers = 'ana'",
    );
    expect(fleetQuery({ overBudget: '0.5' }, now)).toContain('KilnBudgetShare >= 0.5');
  });

  it('refuses values that could change the query, next to a plain one that passes', () => {
    expect(() => fleetQuery({ approver: "x' OR WorkflowType != '" }, now)).toThrow(/--approver .*quotes and backslashes are not allowed/);
    expect(() => fleetQuery({ touched: 'a\\b' }, now)).toThrow(/--touched/);
    expect(fleetQuery({ approver: 'o.brien' }, now)).toContain("KilnApprovers = 'o.brien'");
  });

  it('bad input gets a one-line error that says what to give', () => {
    expect(() => fleetQuery({ phase: 'waiting' }, now)).toThrow(/--phase waiting: expected one of preparing, .*awaiting_approval/);
    expect(() => fleetQuery({ waitingLongerThan: 'soon' }, now)).toThrow(/--waiting-longer-than soon: expected a duration/);
    expect(() => fleetQuery({ overBudget: 'lots' }, now)).toThrow(/--over-budget lots: expected a share/);
  });
});
