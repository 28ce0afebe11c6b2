import { configDefaults, defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    // The deployment's system test (nginx, PgBouncer, real processes) is `npm run test:system`.
    exclude: [...configDefaults.exclude, 'test/system/**'],
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Each test file starts its own database; two cores run two files at a time.
    maxWorkers: 2,
  },
})
