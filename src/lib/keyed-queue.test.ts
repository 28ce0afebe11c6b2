import { describe, expect, it } from 'vitest'
import { createKeyedQueue } from './keyed-queue.ts'

const tick = () => new Promise((resolve) => setTimeout(resolve, 5))

describe('createKeyedQueue', () => {
  it('runs the tasks of one key one at a time, in arrival order, and other keys alongside', async () => {
    const queue = createKeyedQueue()
    const log: string[] = []
    const task = (key: string, n: number) =>
      queue.run(key, async () => {
        log.push(`${key}${n} start`)
        await tick()
        log.push(`${key}${n} end`)
        return n
      })
    const results = await Promise.all([task('a', 1), task('a', 2), task('b', 1), task('a', 3)])
    expect(results).toEqual([1, 2, 1, 3])
    const a = log.filter((line) => line.startsWith('a'))
    expect(a).toEqual(['a1 start', 'a1 end', 'a2 start', 'a2 end', 'a3 start', 'a3 end'])
    // b did not wait for a.
    expect(log.indexOf('b1 start')).toBeLessThan(log.indexOf('a1 end'))
  })

  it('a failing task passes its error on and lets the next one run', async () => {
    const queue = createKeyedQueue()
    const failed = queue.run(1, async () => {
      await tick()
      throw new Error('boom')
    })
    const next = queue.run(1, async () => 'ran')
    await expect(failed).rejects.toThrow('boom')
    await expect(next).resolves.toBe('ran')
  })

  it('with maxWaitMs, a task not started in time rejects and never runs; the order of the rest holds', async () => {
    const queue = createKeyedQueue({ maxWaitMs: 100, waitedTooLong: () => new Error('too long') })
    const log: string[] = []
    let release!: () => void
    const first = queue.run('k', async () => {
      log.push('first start')
      await new Promise<void>((resolve) => {
        release = resolve
      })
      log.push('first end')
    })
    const second = queue.run('k', async () => {
      log.push('second ran')
    })
    await expect(second).rejects.toThrow('too long')
    // A task queued after the one that gave up still waits for the first.
    const third = queue.run('k', async () => {
      log.push('third ran')
    })
    await Promise.resolve()
    expect(log).toEqual(['first start'])
    release()
    await first
    await third
    expect(log).toEqual(['first start', 'first end', 'third ran'])
    // And the key is idle again: a new task starts at once.
    await expect(queue.run('k', async () => 'now')).resolves.toBe('now')
  })
})
