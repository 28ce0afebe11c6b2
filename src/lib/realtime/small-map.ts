// Past this many entries a Map's constant-time lookups are worth its table.
const FLAT_ENTRIES = 8

/**
 * A map for the few entries one socket holds (its channels, its grants): a flat array of keys and
 * values, exactly as long as its entries, while there are at most eight of them, then a Map. An
 * empty Map takes about 180 bytes, a one-entry flat array 64; at 10,000 sockets that difference is
 * a large share of what each socket holds. Insertion order is kept, as a Map keeps it.
 */
export class SmallMap<K, V> implements Iterable<[K, V]> {
  // [key, value, key, value, ...] (never with spare room), a Map past FLAT_ENTRIES, or none yet.
  private items: unknown[] | Map<K, V> | undefined

  get size(): number {
    const items = this.items
    if (items === undefined) return 0
    return items instanceof Map ? items.size : items.length / 2
  }

  private indexOf(key: K): number {
    const items = this.items as unknown[]
    for (let i = 0; i < items.length; i += 2) if (items[i] === key) return i
    return -1
  }

  get(key: K): V | undefined {
    const items = this.items
    if (items === undefined) return undefined
    if (items instanceof Map) return items.get(key)
    const at = this.indexOf(key)
    return at < 0 ? undefined : (items[at + 1] as V)
  }

  has(key: K): boolean {
    const items = this.items
    if (items === undefined) return false
    return items instanceof Map ? items.has(key) : this.indexOf(key) >= 0
  }

  set(key: K, value: V): this {
    const items = this.items
    if (items instanceof Map) {
      items.set(key, value)
      return this
    }
    if (items === undefined) {
      this.items = [key, value]
      return this
    }
    const at = this.indexOf(key)
    if (at >= 0) items[at + 1] = value
    else if (items.length / 2 < FLAT_ENTRIES) this.items = items.concat([key, value])
    else this.items = new Map([...this.entries(), [key, value]])
    return this
  }

  delete(key: K): boolean {
    const items = this.items
    if (items === undefined) return false
    if (items instanceof Map) return items.delete(key)
    const at = this.indexOf(key)
    if (at < 0) return false
    this.items = items.length === 2 ? undefined : items.slice(0, at).concat(items.slice(at + 2))
    return true
  }

  *entries(): IterableIterator<[K, V]> {
    const items = this.items
    if (items === undefined) return
    if (items instanceof Map) return yield* items.entries()
    for (let i = 0; i < items.length; i += 2) yield [items[i] as K, items[i + 1] as V]
  }

  *keys(): IterableIterator<K> {
    for (const [key] of this.entries()) yield key
  }

  [Symbol.iterator](): IterableIterator<[K, V]> {
    return this.entries()
  }
}
