import { describe, expect, it } from 'vitest'
import { laravelFixtures as fixtures, phpValues } from './fixtures/laravel-fixtures.ts'
import {
  type PhpKey,
  PhpOpaque,
  PhpUnserializeError,
  type PhpValue,
  unserializePhp,
} from './php-unserialize.ts'

const array = (...entries: [PhpKey, PhpValue][]) => new Map(entries)
const list = (...values: PhpValue[]) => new Map(values.map((value, index) => [index, value]))

const refusal = (input: string | Uint8Array, limits?: Parameters<typeof unserializePhp>[1]) => {
  try {
    unserializePhp(input, limits)
  } catch (error) {
    if (error instanceof PhpUnserializeError) return error
    throw error
  }
  throw new Error('expected a PhpUnserializeError')
}

describe('unserializePhp', () => {
  it.each(Object.entries(fixtures.serialized))('reads what PHP serialized: %s', (name, text) => {
    expect(unserializePhp(text)).toEqual(phpValues[name])
  })

  it('counts string lengths in bytes, from text or from bytes', () => {
    expect(unserializePhp('s:2:"é";')).toBe('é')
    expect(unserializePhp('s:4:"😀";')).toBe('😀')
    expect(unserializePhp(Buffer.from('s:15:"héllo ✓ 😀";'))).toBe('héllo ✓ 😀')
    expect(unserializePhp(new TextEncoder().encode('a:1:{i:0;s:3:"✓";}'))).toEqual(list('✓'))
    // One character, two bytes: a length in characters is a length that lies.
    expect(refusal('s:1:"é";').message).toContain('expected """')
    expect(refusal('s:3:"😀";').offset).toBe(8)
  })

  it('keys arrays as PHP does: numeric strings become ints, a repeated key keeps its place and the last value', () => {
    expect(unserializePhp('a:3:{s:1:"1";i:1;s:2:"01";i:2;s:2:"-5";i:3;}')).toEqual(
      array([1, 1], ['01', 2], [-5, 3]),
    )
    expect(unserializePhp('a:3:{i:0;s:1:"a";i:1;s:1:"x";i:0;s:1:"b";}')).toEqual(list('b', 'x'))
    expect([...(unserializePhp('a:2:{i:9;N;s:1:"a";N;}') as Map<PhpKey, PhpValue>).keys()]).toEqual([9, 'a'])
  })

  it('reads the forms of numbers PHP accepts', () => {
    expect(unserializePhp('i:+5;')).toBe(5)
    expect(unserializePhp('i:-0;')).toBe(0)
    expect(unserializePhp('i:9007199254740993;')).toBe(9007199254740993n)
    expect(unserializePhp('d:.5;')).toBe(0.5)
    expect(unserializePhp('d:1.;')).toBe(1)
    expect(unserializePhp('d:1e5;')).toBe(100000)
    expect(unserializePhp('d:NAN;')).toBeNaN()
  })

  it('stands an opaque marker for objects, keeping only the class', () => {
    const value = unserializePhp(
      'a:2:{i:0;O:8:"stdClass":1:{s:3:"key";s:6:"secret";}i:1;C:11:"ArrayObject":6:{x:i:0;}}',
    )
    expect(value).toEqual(list(new PhpOpaque('object', 'stdClass'), new PhpOpaque('object', 'ArrayObject')))
    const [object] = (value as Map<PhpKey, PhpValue>).values()
    expect(Object.keys(object as object).sort()).toEqual(['kind', 'name'])
  })

  it.each([
    ['nothing', ''],
    ['an unknown type', 'x:1;'],
    ['an escaped string (S:)', 'S:1:"a";'],
    ['an int without its end', 'i:12'],
    ['an empty int', 'i:;'],
    ['a float as an int', 'i:1.5;'],
    ['a bool other than 0 or 1', 'b:2;'],
    ['a malformed float', 'd:1e;'],
    ['a negative length', 's:-1:"";'],
    ['a signed length', 's:+1:"a";'],
    ['a length too short', 's:3:"abcd";'],
    ['a length too long', 's:5:"abc";'],
    ['an unquoted string', 's:3:abc;'],
    ['an unterminated string', 's:3:"abc"'],
    ['an array without its close', 'a:1:{i:0;i:1;'],
    ['an array with fewer elements than declared', 'a:2:{i:0;i:1;}'],
    ['an array with more elements than declared', 'a:1:{i:0;i:1;i:1;i:2;}'],
    ['a float key', 'a:1:{d:1.5;i:1;}'],
    ['a null key', 'a:1:{N;i:1;}'],
    ['an int key beyond 2^53', 'a:1:{i:9007199254740993;N;}'],
    ['an object property without a value', 'O:3:"Foo":1:{s:1:"a";}'],
    ['Serializable data shorter than declared', 'C:3:"Foo":5:{ab}'],
    ['data after the value (PHP ignores it; refused here)', 'i:1;i:2;'],
    ['a reference without a slot', 'r:;'],
  ])('refuses %s', (_, text) => {
    expect(refusal(text)).toBeInstanceOf(PhpUnserializeError)
  })

  it('refuses a huge declared length or count from the data it has, before reading further', () => {
    for (const text of [
      's:999999999999:"a";',
      'a:100000000:{i:0;N;}',
      'O:3:"Foo":4294967295:{}',
      'C:3:"Foo":99999999:{}',
    ]) {
      expect(refusal(text).message).toContain('declared length exceeds the data')
    }
    // Each element takes at least 6 bytes (`i:0;N;`): 4 elements cannot fit in 20 bytes.
    expect(refusal('a:4:{i:0;N;i:1;N;i:2;N;}').message).toContain('declared length exceeds the data')
    // A length of many digits is not even read.
    expect(refusal(`s:${'9'.repeat(400)}:"a";`).message).toContain('ended by ":"')
  })

  it('bounds nesting and size', () => {
    const nested = (depth: number) => `${'a:1:{i:0;'.repeat(depth)}N;${'}'.repeat(depth)}`
    expect(unserializePhp(nested(64))).toBeInstanceOf(Map)
    expect(refusal(nested(65)).message).toContain('nested too deeply')
    expect(refusal(nested(3), { maxDepth: 2 }).message).toContain('nested too deeply')
    expect(refusal('s:3:"abc";', { maxBytes: 9 }).message).toContain('larger than 9 bytes')
    expect(unserializePhp('s:3:"abc";', { maxBytes: 10 })).toBe('abc')
  })

  it('names the byte where the data went wrong, and never the data', () => {
    const error = refusal('a:1:{s:6:"secret";s:9:"password";}')
    expect(error.offset).toBe(32)
    expect(error.message).toBe('Malformed PHP serialized data at byte 32: expected """')
    expect(error.message).not.toContain('password')
  })
})
