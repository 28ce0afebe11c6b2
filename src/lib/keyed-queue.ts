/**
 * Runs tasks one at a time per key, in arrival order; tasks of different keys run side by side.
 * A waiting task holds nothing but a promise (no database connection, no lock).
 */
export interface KeyedQueue {
  run<T>(key: string | number, task: () => Promise<T>): Promise<T>
}

export function createKeyedQueue(): KeyedQueue {
  // The promise that settles when the last queued task of a key is done; gone when the key is idle.
  const tails = new Map<string | number, Promise<void>>()
  return {
    async run<T>(key: string | number, task: () => Promise<T>): Promise<T> {
      const previous = tails.get(key) ?? Promise.resolve()
      let done!: () => void
      const finished = new Promise<void>((resolve) => {
        done = resolve
      })
      const mine = previous.then(() => finished)
      tails.set(key, mine)
      await previous
      try {
        return await task()
      } finally {
        done()
        if (tails.get(key) === mine) tails.delete(key)
      }
    },
  }
}
