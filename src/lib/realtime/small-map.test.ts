import { describe, expect, it } from 'vitest'
import { SmallMap } from './small-map.ts'

describe('SmallMap', () => {
  it('answers as a Map does, in insertion order, below and past its flat size', () => {
    const small = new SmallMap<string, number>()
    const map = new Map<string, number>()
    const same = () => {
      expect([...small]).toEqual([...map])
      expect([...small.keys()]).toEqual([...map.keys()])
      expect(small.size).toBe(map.size)
    }
    same()
    // Adds, overwrites and deletes (first, middle, last) through 0 -> 20 -> 0 entries and back.
    for (let i = 0; i < 20; i++) {
      small.set(`c${i}`, i)
      map.set(`c${i}`, i)
      same()
    }
    small.set('c3', 33)
    map.set('c3', 33)
    same()
    for (const key of ['c0', 'c10', 'c19', 'nope']) {
      expect(small.delete(key)).toBe(map.delete(key))
      same()
    }
    for (const key of [...map.keys()]) {
      expect(small.get(key)).toBe(map.get(key))
      expect(small.has(key)).toBe(true)
      small.delete(key)
      map.delete(key)
      same()
    }
    expect(small.has('c3')).toBe(false)
    expect(small.get('c3')).toBeUndefined()
    for (const [i, key] of ['b', 'a', 'c'].entries()) {
      small.set(key, i)
      map.set(key, i)
    }
    same()
    expect(small.delete('a')).toBe(true)
    map.delete('a')
    same()
  })
})
