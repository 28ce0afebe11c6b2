import { randomBytes } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, expect } from 'vitest'
import { databaseSetup } from './setup-time.ts'

// Loaded before each test file when TEST_PROFILE_DIR is set (vitest.config.ts): one record per file
// of its wall time, its own CPU time and its database setup time, read by scripts/test-profile.ts.
// A worker that runs several files keeps its modules: the counts start again with each file.
databaseSetup.ms = 0
databaseSetup.cpuMs = 0
databaseSetup.count = 0
const startedAt = performance.now()
const cpuAtStart = process.cpuUsage()

// Registered first, so it runs after the file's own afterAll hooks (they run in reverse order).
afterAll(() => {
  const dir = process.env.TEST_PROFILE_DIR
  if (!dir) return
  const cpu = process.cpuUsage(cpuAtStart)
  const record = {
    file: expect.getState().testPath,
    wallMs: performance.now() - startedAt,
    cpuMs: (cpu.user + cpu.system) / 1000,
    setupMs: databaseSetup.ms,
    setupCpuMs: databaseSetup.cpuMs,
    databases: databaseSetup.count,
  }
  writeFileSync(join(dir, `${process.pid}-${randomBytes(4).toString('hex')}.json`), JSON.stringify(record))
})
