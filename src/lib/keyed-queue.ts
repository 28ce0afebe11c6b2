/**
 * Runs tasks one at a time per key, in arrival order; tasks of different keys run side by side.
 * A waiting task holds nothing but a promise (no database connection, no lock).
 */
export interface KeyedQueue {
  run<T>(key: string | number, task: () => Promise<T>): Promise<T>
}

export interface KeyedQueueOptions {
  /**
   * The longest a task waits for its turn: past it, run rejects with `waitedTooLong()` and the task
   * never runs (the tasks after it keep their order).
   */
  maxWaitMs?: number
  waitedTooLong?: () => Error
}

export function createKeyedQueue(options: KeyedQueueOptions = {}): KeyedQueue {
  // The promise that settles when the last queued task of a key is done; gone when the key is idle.
  const tails = new Map<string | number, Promise<void>>()
  const { maxWaitMs, waitedTooLong = () => new Error('waited too long for its turn') } = options

  /** Resolves when `turn` does, or rejects once maxWaitMs have passed before it. */
  const awaitTurn = (turn: Promise<void>): Promise<void> => {
    if (maxWaitMs === undefined) return turn
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(waitedTooLong()), maxWaitMs)
    })
    return Promise.race([turn, late]).finally(() => clearTimeout(timer))
  }

  return {
    async run<T>(key: string | number, task: () => Promise<T>): Promise<T> {
      const previous = tails.get(key) ?? Promise.resolve()
      let done!: () => void
      const finished = new Promise<void>((resolve) => {
        done = resolve
      })
      // This task's turn ends when the previous one has ended and this one is done (or gave up):
      // a task that gave up still keeps the next one waiting for the task before it.
      const mine = previous.then(() => finished)
      tails.set(key, mine)
      void mine.then(() => {
        if (tails.get(key) === mine) tails.delete(key)
      })
      try {
        await awaitTurn(previous)
        return await task()
      } finally {
        done()
      }
    },
  }
}
