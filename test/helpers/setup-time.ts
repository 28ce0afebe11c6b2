/**
 * Time this test file spent making databases (a copy of the migrated template, or migrations where a
 * test runs them itself), for `npm run test:profile`: the setup share of the file's time.
 */
export const databaseSetup = { ms: 0, cpuMs: 0, count: 0 }

/** Runs `make`, adding its wall time to the file's database setup time. */
export async function timedSetup<T>(make: () => Promise<T>): Promise<T> {
  const started = performance.now()
  const cpu = process.cpuUsage()
  try {
    return await make()
  } finally {
    const used = process.cpuUsage(cpu)
    databaseSetup.ms += performance.now() - started
    databaseSetup.cpuMs += (used.user + used.system) / 1000
    databaseSetup.count += 1
  }
}
