/**
 * Housekeeping that runs in the background, never inside a request: `start()` runs `task` at once
 * and then every `everyMs` (an unref'd timer, so it never keeps the process alive), one run at a
 * time; a failed run goes to `onError` and the next one comes as planned. `stop()` clears the timer
 * and waits for the run under way.
 */
export function createPeriodicTask(
  task: () => Promise<unknown>,
  { everyMs, onError }: { everyMs: number; onError: (error: unknown) => void },
) {
  let running: Promise<void> | null = null
  let timer: NodeJS.Timeout | undefined
  let stopped = false

  const run = (): Promise<void> => {
    if (stopped) return Promise.resolve()
    running ??= task()
      .then(() => {}, onError)
      .finally(() => {
        running = null
      })
    return running
  }

  return {
    /** Runs now (or joins the run under way); resolves when it is done. */
    run,
    start(): void {
      if (stopped || timer) return
      void run()
      timer = setInterval(run, everyMs).unref()
    },
    async stop(): Promise<void> {
      stopped = true
      clearInterval(timer)
      await running
    },
  }
}
