import { describe, expect, it } from 'vitest'
import { bounded, MAX_TOOL_ITEMS, MAX_TOOL_RESULT_BYTES } from './bounded.ts'

/** The bytes of a value as the model is handed it (JSON text, UTF-8). */
const bytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value) ?? 'null')

/** `n` ticker-like rows, each about `size` bytes of JSON. */
const rows = (n: number, size = 60) =>
  Array.from({ length: n }, (_, i) => ({ symbol: `T${i}`, name: 'x'.repeat(Math.max(0, size - 30)) }))

describe('bounded() on small values', () => {
  it('hands back objects, strings, numbers and booleans as they are', () => {
    const object = { slug: 'credit-holds', title: 'Credit holds', nested: { list: [1, 2, 3] } }
    expect(bounded(object)).toBe(object)
    expect(bounded('a plain answer')).toBe('a plain answer')
    expect(bounded(42)).toBe(42)
    expect(bounded(false)).toBe(false)
    expect(bounded(0)).toBe(0)
  })

  it('turns nothing (undefined) into null, and keeps null', () => {
    expect(bounded(undefined)).toBeNull()
    expect(bounded(null)).toBeNull()
  })

  it('hands back short lists whole, up to MAX_TOOL_ITEMS items', () => {
    expect(bounded([])).toEqual([])
    const three = rows(3)
    expect(bounded(three)).toEqual(three)
    const full = rows(MAX_TOOL_ITEMS)
    expect(bounded(full)).toEqual(full)
  })

  it('leaves a value of exactly MAX_TOOL_RESULT_BYTES alone', () => {
    const overhead = bytes({ text: '' })
    const value = { text: 'x'.repeat(MAX_TOOL_RESULT_BYTES - overhead) }
    expect(bytes(value)).toBe(MAX_TOOL_RESULT_BYTES)
    expect(bounded(value)).toBe(value)
  })
})

describe('bounded() on long lists', () => {
  it('keeps the first MAX_TOOL_ITEMS items and says how many there were', () => {
    const list = rows(MAX_TOOL_ITEMS * 5)
    expect(bounded(list)).toEqual({
      items: list.slice(0, MAX_TOOL_ITEMS),
      total: list.length,
      truncated: true,
    })
  })

  it('cuts a list one item over the limit', () => {
    const list = rows(MAX_TOOL_ITEMS + 1)
    expect(bounded(list)).toEqual({
      items: list.slice(0, MAX_TOOL_ITEMS),
      total: MAX_TOOL_ITEMS + 1,
      truncated: true,
    })
  })

  it('keeps fewer items when MAX_TOOL_ITEMS of them would be too large, a prefix that fits', () => {
    // 2 KB each: 20 of them are 40 KB, more than MAX_TOOL_RESULT_BYTES.
    const list = rows(MAX_TOOL_ITEMS * 3, 2048)
    const result = bounded(list) as { items: unknown[]; total: number; truncated: boolean }
    expect(result.truncated).toBe(true)
    expect(result.total).toBe(list.length)
    expect(result.items.length).toBeGreaterThan(0)
    expect(result.items.length).toBeLessThan(MAX_TOOL_ITEMS)
    expect(result.items).toEqual(list.slice(0, result.items.length))
    expect(bytes(result)).toBeLessThanOrEqual(MAX_TOOL_RESULT_BYTES)
  })

  it('cuts a short list of large items too, and says so', () => {
    const list = rows(10, 4096)
    const result = bounded(list) as { items: unknown[]; total: number; truncated: boolean }
    expect(result).toMatchObject({ total: 10, truncated: true })
    expect(result.items).toEqual(list.slice(0, result.items.length))
    expect(bytes(result)).toBeLessThanOrEqual(MAX_TOOL_RESULT_BYTES)
  })
})

describe('bounded() on huge values', () => {
  it('cuts a huge object to the start of its JSON text, within MAX_TOOL_RESULT_BYTES', () => {
    const article = { slug: 'long', title: 'A long article', content: 'word '.repeat(20_000) }
    const result = bounded(article) as { truncated: boolean; text: string }
    expect(Object.keys(result).sort()).toEqual(['text', 'truncated'])
    expect(result.truncated).toBe(true)
    expect(JSON.stringify(article).startsWith(result.text)).toBe(true)
    expect(result.text.length).toBeGreaterThan(MAX_TOOL_RESULT_BYTES / 2)
    expect(bytes(result)).toBeLessThanOrEqual(MAX_TOOL_RESULT_BYTES)
  })

  it('cuts a huge string the same way', () => {
    const result = bounded('y'.repeat(MAX_TOOL_RESULT_BYTES * 3)) as { truncated: boolean; text: string }
    expect(result.truncated).toBe(true)
    expect(result.text).toMatch(/^"y+$/)
    expect(bytes(result)).toBeLessThanOrEqual(MAX_TOOL_RESULT_BYTES)
  })

  it('cuts a list whose first item alone is too large: one item kept, then cut as text', () => {
    const list = [{ notes: 'n'.repeat(MAX_TOOL_RESULT_BYTES * 2) }, { notes: 'short' }]
    const result = bounded(list) as { truncated: boolean; text: string }
    expect(result.truncated).toBe(true)
    expect(result.text.startsWith('{"items":[{"notes":"nnn')).toBe(true)
    expect(bytes(result)).toBeLessThanOrEqual(MAX_TOOL_RESULT_BYTES)
  })

  // The cut is measured as sent: UTF-8 bytes, and the text's quotes escaped a second time.
  it('keeps a huge non-ASCII value within MAX_TOOL_RESULT_BYTES', () => {
    expect(bytes(bounded({ text: '€'.repeat(MAX_TOOL_RESULT_BYTES) }))).toBeLessThanOrEqual(
      MAX_TOOL_RESULT_BYTES,
    )
  })

  it('keeps a huge object of many short strings within MAX_TOOL_RESULT_BYTES', () => {
    const fields = Object.fromEntries(Array.from({ length: 3000 }, (_, i) => [`k${i}`, 'v']))
    expect(bytes(bounded(fields))).toBeLessThanOrEqual(MAX_TOOL_RESULT_BYTES)
  })
})
