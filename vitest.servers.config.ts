import { globSync } from 'node:fs'
import { dirname, matchesGlob } from 'node:path'
import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vitest/config'
import { filesThatTouchDatabases } from './test/runs/database-files.ts'
import base from './vitest.config.ts'

// `npm run test:servers [-- files]`: the suite again on PostgreSQL + Redis (the machine's own unless
// TEST_DATABASE_URL / TEST_REDIS_URL name others), limited to the files that can reach a database or
// Redis; the rest touch neither and ran once already, under `npm test`.
process.env.TEST_DATABASE_URL ??= 'postgres://postgres@127.0.0.1:5432/postgres'
process.env.TEST_REDIS_URL ??= 'redis://127.0.0.1:6379'

const root = dirname(fileURLToPath(import.meta.url))
const testFiles = globSync(base.test?.include ?? [], { cwd: root }).filter(
  (file) => !(base.test?.exclude ?? []).some((pattern) => matchesGlob(file, pattern)),
)

export default defineConfig({
  ...base,
  test: { ...base.test, include: filesThatTouchDatabases(root, testFiles) },
})
