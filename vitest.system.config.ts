import { defineConfig } from 'vitest/config'

// `npm run test:system`: the deployment recipe run for real (nginx, two server processes, PostgreSQL,
// Redis; SYSTEM_VIA_PGBOUNCER=1 adds PgBouncer), and the fault tests (faults-*.test.ts), which break a
// PostgreSQL and a Redis of their own under that deployment. Files one at a time, each file's tests
// in order on its one stack.
export default defineConfig({
  test: {
    include: ['test/system/**/*.test.ts'],
    pool: 'forks',
    maxWorkers: 1,
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
})
