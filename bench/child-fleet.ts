import { fork } from 'node:child_process'

/**
 * A bench's clients in a child process of the bench's own file, driven over IPC, so their work is
 * not charged to the app's event loop: the child serves a "fleet" (an object of async methods), the
 * parent calls them as if they were local.
 */

type Call = { id: number; method: string; args: unknown[] }
type Answer = { id: number; result?: unknown; error?: string }

/** The child's side: `create()`'s methods answer the parent's calls; it exits when the parent lets go. */
export function serveFleet(create: () => object): void {
  const fleet = create() as Record<string, (...args: unknown[]) => Promise<unknown>>
  process.on('message', (call: Call) => {
    const method = fleet[call.method] as (...args: unknown[]) => Promise<unknown>
    method(...call.args).then(
      (result) => process.send?.({ id: call.id, result } satisfies Answer),
      (error: Error) => process.send?.({ id: call.id, error: error.stack ?? String(error) } satisfies Answer),
    )
  })
  process.on('disconnect', () => process.exit(0))
}

/**
 * The parent's side: forks `file` with `--fleet` (which must call `serveFleet` then) and answers the
 * fleet's `methods` as remote calls; `stop` ends the child. `execArgv` defaults to this process's;
 * `stdout` (default inherit) may send the child's output to /dev/null.
 */
export function forkFleet<F extends object>(
  file: string,
  methods: readonly (keyof F & string)[],
  options: { execArgv?: string[]; stdout?: 'inherit' | 'ignore' } = {},
): F & { pid: number; stop(): void } {
  // stdout 'ignore': what the child logs goes to /dev/null (a production app's log lines, at full rate).
  const child = fork(file, ['--fleet'], {
    stdio: ['inherit', options.stdout ?? 'inherit', 'inherit', 'ipc'],
    ...(options.execArgv ? { execArgv: options.execArgv } : {}),
  })
  const waiting = new Map<number, { resolve(value: unknown): void; reject(error: Error): void }>()
  let ids = 0
  child.on('message', (answer: Answer) => {
    const call = waiting.get(answer.id)
    waiting.delete(answer.id)
    if (answer.error !== undefined) call?.reject(new Error(`clients: ${answer.error}`))
    else call?.resolve(answer.result)
  })
  child.on('exit', (code) => {
    for (const call of waiting.values()) call.reject(new Error(`clients exited (${code})`))
    waiting.clear()
  })
  const remote =
    (method: string) =>
    (...args: unknown[]) =>
      new Promise((resolve, reject) => {
        const id = ++ids
        waiting.set(id, { resolve, reject })
        child.send({ id, method, args } satisfies Call)
      })
  const fleet = Object.fromEntries(methods.map((method) => [method, remote(method)])) as unknown as F
  return Object.assign(fleet, {
    pid: child.pid ?? 0,
    stop: () => {
      if (child.connected) child.disconnect()
    },
  })
}
