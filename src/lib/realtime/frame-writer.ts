// Sockets written to before the writer lets other work run (about a millisecond of writes).
const WRITE_SLICE = 256

/**
 * Frames waiting to be written, in delivery order. A large fan-out is written a slice at a time,
 * yielding to the event loop between slices, so it neither holds up the request that caused it nor
 * stalls every other request; frames still reach each socket in the order they were queued.
 */
export function createFrameWriter<T>(send: (target: T, frame: string) => void) {
  const queue: { target: T; frame: string }[] = []
  let writing = false

  const writeSlice = () => {
    for (const { target, frame } of queue.splice(0, WRITE_SLICE)) send(target, frame)
    if (queue.length > 0) setImmediate(writeSlice)
    else writing = false
  }

  return {
    /** Queues one frame for one target. */
    push(target: T, frame: string): void {
      queue.push({ target, frame })
    },
    /** Starts writing what is queued (the first slice at once), unless it is already under way. */
    flush(): void {
      if (writing) return
      writing = true
      writeSlice()
    },
  }
}
