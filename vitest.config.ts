import { configDefaults, defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    // The deployment's system test (nginx, PgBouncer, real processes) is `npm run test:system`.
    exclude: [...configDefaults.exclude, 'test/system/**'],
    // `npm run test:profile` records each file's time (scripts/test-profile.ts).
    setupFiles: process.env.TEST_PROFILE_DIR ? ['test/helpers/profile-setup.ts'] : [],
    // Migrates one database per run; each test database is a copy of it (test/helpers/test-database.ts).
    globalSetup: ['test/helpers/database-template.ts'],
    pool: 'forks',
    // A worker runs file after file in one process, keeping its modules (imported once, not once per
    // file) and its compiled PGlite; each file still makes its own app and database.
    isolate: false,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Three files at a time on two cores: a third of a file's time is spent waiting (child processes,
    // sockets, timers), which the third worker fills.
    maxWorkers: 3,
  },
})
