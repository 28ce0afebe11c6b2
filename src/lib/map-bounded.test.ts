import { describe, expect, it } from 'vitest'
import { mapBounded } from './map-bounded.ts'

describe('mapBounded', () => {
  it('runs at most `width` at once and answers in the items order', async () => {
    let running = 0
    let most = 0
    const results = await mapBounded([5, 1, 4, 2, 3], 2, async (n) => {
      running++
      most = Math.max(most, running)
      for (let i = 0; i < n; i++) await Promise.resolve()
      running--
      return n * 10
    })
    expect(results).toEqual([50, 10, 40, 20, 30])
    expect(most).toBe(2)
  })

  it('starts nothing after a failure and rejects with it once the running ones end', async () => {
    const started: number[] = []
    let ended = 0
    const run = mapBounded([1, 2, 3, 4, 5], 2, async (n) => {
      started.push(n)
      for (let i = 0; i < 3; i++) await Promise.resolve()
      ended++
      if (n === 2) throw new Error('two')
    })
    await expect(run).rejects.toThrow('two')
    expect(started).toEqual([1, 2, 3])
    expect(ended).toBe(started.length)
  })
})
