export { kilnRun } from './run.js';
export { kilnBudget } from './budget-ledger.js';
