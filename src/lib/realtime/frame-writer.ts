// Sockets written to before the writer lets other work run (a few milliseconds of writes).
const WRITE_SLICE = 256

/** One frame for some targets, written in their order. */
interface Batch<T, F> {
  frame: F
  targets: readonly T[]
}

/**
 * Frames waiting to be written, in delivery order. A large fan-out is written a slice at a time,
 * yielding to the event loop between slices, so it neither holds up the request that caused it nor
 * stalls every other request; frames still reach each socket in the order they were queued.
 *
 * A fan-out is queued as one batch (the frame and its targets), not an entry per target, and the
 * queue is read through a cursor: a backlog of many fan-outs costs each slice only its own writes.
 */
export function createFrameWriter<T, F>(send: (target: T, frame: F) => void) {
  const queue: (Batch<T, F> | undefined)[] = []
  // The next write: queue[head].targets[offset].
  let head = 0
  let offset = 0
  let writing = false

  const writeSlice = () => {
    let budget = WRITE_SLICE
    while (budget > 0 && head < queue.length) {
      const { frame, targets } = queue[head] as Batch<T, F>
      const end = Math.min(targets.length, offset + budget)
      for (let i = offset; i < end; i++) send(targets[i] as T, frame)
      budget -= end - offset
      if (end < targets.length) offset = end
      else {
        queue[head++] = undefined
        offset = 0
      }
    }
    if (head < queue.length) {
      // Written batches leave the front of a long backlog now and then, not at every slice.
      if (head >= 1024 && head * 2 >= queue.length) {
        queue.splice(0, head)
        head = 0
      }
      setImmediate(writeSlice)
    } else {
      queue.length = 0
      head = 0
      writing = false
    }
  }

  return {
    /** Queues one frame for one target. */
    push(target: T, frame: F): void {
      queue.push({ frame, targets: [target] })
    },
    /** Queues one frame for every target, in their order (the array is the writer's from now on). */
    pushAll(targets: readonly T[], frame: F): void {
      if (targets.length > 0) queue.push({ frame, targets })
    },
    /** Starts writing what is queued (the first slice at once), unless it is already under way. */
    flush(): void {
      if (writing) return
      writing = true
      writeSlice()
    },
  }
}
