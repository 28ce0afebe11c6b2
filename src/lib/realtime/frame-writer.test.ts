import { setImmediate as nextTurn } from 'node:timers/promises'
import { describe, expect, it } from 'vitest'
import { createFrameWriter } from './frame-writer.ts'

/** A writer whose writes are recorded per target, in the order they were made. */
function recorded() {
  const written = new Map<number, string[]>()
  let writes = 0
  const writer = createFrameWriter<number, string>((target, frame) => {
    writes++
    const frames = written.get(target) ?? []
    frames.push(frame)
    written.set(target, frames)
  })
  return { writer, written, writes: () => writes }
}

/** Lets the event loop turn until the writer has made `count` writes (or fails). */
async function until(writes: () => number, count: number) {
  for (let turn = 0; writes() < count; turn++) {
    if (turn > 10_000) throw new Error(`only ${writes()} of ${count} writes`)
    await nextTurn()
  }
}

const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i)

describe('createFrameWriter', () => {
  it('writes a small fan-out at once, and a large one a slice at a time, yielding in between', async () => {
    const small = recorded()
    small.writer.pushAll(range(0, 10), 'a')
    small.writer.flush()
    expect(small.writes()).toBe(10)

    const large = recorded()
    large.writer.pushAll(range(0, 1000), 'a')
    large.writer.flush()
    expect(large.writes()).toBe(256)
    await nextTurn()
    expect(large.writes()).toBe(512)
    await until(large.writes, 1000)
    expect([...large.written.values()].every((frames) => frames.join() === 'a')).toBe(true)
  })

  it('keeps each target’s frames in the order they were queued, across fan-outs and single frames', async () => {
    const { writer, written, writes } = recorded()
    writer.pushAll(range(0, 600), 'first')
    writer.flush()
    // Queued while the first fan-out is still being written.
    writer.push(599, 'only-599')
    writer.pushAll(range(0, 600).reverse(), 'second')
    writer.flush()
    writer.push(0, 'only-0')
    await until(writes, 1202)
    expect(written.get(599)).toEqual(['first', 'only-599', 'second'])
    expect(written.get(0)).toEqual(['first', 'second', 'only-0'])
    expect(written.get(300)).toEqual(['first', 'second'])
  })

  it('works through a backlog of many fan-outs, every frame written once and in order', async () => {
    const { writer, written, writes } = recorded()
    const fanOuts = 3000
    for (let n = 0; n < fanOuts; n++) {
      writer.pushAll(range(0, 100), `m${n}`)
      writer.flush()
    }
    await until(writes, fanOuts * 100)
    expect(writes()).toBe(fanOuts * 100)
    const expected = range(0, fanOuts).map((n) => `m${n}`)
    expect(written.get(0)).toEqual(expected)
    expect(written.get(99)).toEqual(expected)
    // Idle again: a new frame is written at once.
    writer.push(7, 'after')
    writer.flush()
    expect(written.get(7)?.at(-1)).toBe('after')
  })
})
