/** A handler of one event; a returned promise is awaited only for its failure, which is reported. */
export type EventHandler<T> = (payload: T) => void | Promise<void>

export interface EventBus<Events extends object> {
  /** Calls `handler` on every later `emit` of `name`; answers a function that stops it. */
  on<K extends keyof Events>(name: K, handler: EventHandler<Events[K]>): () => void
  /**
   * Calls the handlers of `name` in the order they were added, synchronously. A handler that throws
   * or rejects is reported to `onError` and never reaches the emitter: an event is a notification,
   * so a failing listener must not undo or fail the change that caused it.
   */
  emit<K extends keyof Events>(name: K, payload: Events[K]): void
  /**
   * For a consequence the change is not complete without (the other sessions ending after a
   * password change): calls the handlers of `name` one after the other, awaiting each, and rejects
   * with the first failure, so the emitter's answer tells the truth.
   */
  publish<K extends keyof Events>(name: K, payload: Events[K]): Promise<void>
}

/** A minimal typed in-process event bus (one process; cross-instance fan-out is Redis's job later). */
export function createEventBus<Events extends object>(
  onError: (error: unknown, name: keyof Events) => void = () => {},
): EventBus<Events> {
  const handlers = new Map<keyof Events, Set<EventHandler<never>>>()
  return {
    on(name, handler) {
      const set = handlers.get(name) ?? new Set()
      set.add(handler as EventHandler<never>)
      handlers.set(name, set)
      return () => {
        set.delete(handler as EventHandler<never>)
      }
    },
    emit(name, payload) {
      // A copy: a handler that unsubscribes (or subscribes) while running does not disturb this emit.
      for (const handler of [...(handlers.get(name) ?? [])]) {
        try {
          const result = (handler as EventHandler<typeof payload>)(payload)
          if (result instanceof Promise) result.catch((error: unknown) => onError(error, name))
        } catch (error) {
          onError(error, name)
        }
      }
    },
    async publish(name, payload) {
      for (const handler of [...(handlers.get(name) ?? [])]) {
        await (handler as EventHandler<typeof payload>)(payload)
      }
    },
  }
}
