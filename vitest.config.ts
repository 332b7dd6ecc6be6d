import { defineConfig } from 'vitest/config';

/**
 * Test projects. `npm test` (scripts/test.mjs) picks which to run:
 * the server suite runs once per database engine (TEST_DB), the browser
 * suite needs Chromium and a built web app.
 */
const serverSuite = (name: string, db: 'sqlite' | 'postgres') => ({
  test: {
    name,
    include: ['server/src/**/*.test.ts', 'contract/src/**/*.test.ts'],
    // Every templated statement is also built by Kysely and compared (StatementTemplate).
    env: { TEST_DB: db, CONCIERGE_CHECK_TEMPLATES: '1' },
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});

export default defineConfig({
  test: {
    projects: [
      serverSuite('server-sqlite', 'sqlite'),
      serverSuite('server-postgres', 'postgres'),
      {
        test: {
          name: 'e2e',
          include: ['e2e/src/**/*.test.ts'],
          env: { CONCIERGE_CHECK_TEMPLATES: '1' },
          testTimeout: 120_000,
          hookTimeout: 180_000,
          fileParallelism: false,
          // A browser on a busy CI machine can take a few seconds to settle.
          expect: { poll: { timeout: 10_000, interval: 100 } },
        },
      },
    ],
  },
});
