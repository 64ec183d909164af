export { kilnRun } from './run.js';
