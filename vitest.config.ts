import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['tests/**/*.test.ts'],
    // one temporary directory for the whole run, removed at its end
    globalSetup: ['tests/global-setup.ts'],
    // workflow and end-to-end tests start real servers and worker processes: on a 2-core
    // machine two files at a time is the most that keeps timings honest
    maxWorkers: 2,
    testTimeout: 120_000,
    hookTimeout: 120_000,
    reporters: ['default'],
  },
});
