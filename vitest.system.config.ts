import { defineConfig } from 'vitest/config'

// `npm run test:system`: the deployment recipe run for real (nginx, two server processes, PostgreSQL,
// Redis; SYSTEM_VIA_PGBOUNCER=1 adds PgBouncer). One file, its tests in order on one shared stack.
export default defineConfig({
  test: {
    include: ['test/system/**/*.test.ts'],
    pool: 'forks',
    maxWorkers: 1,
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
})
