/**
 * Polls `check` (assertions that throw while they do not hold yet) until it passes, answering what
 * it answered; after `timeoutMs` fails with its last error. (`eventually` in echo.ts waits for a
 * truthy value instead.)
 */
export async function eventuallyPasses<T>(check: () => Promise<T> | T, timeoutMs = 5_000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    try {
      return await check()
    } catch (error) {
      if (Date.now() > deadline) throw error
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
  }
}
