import { createEventBus } from './events.ts'

/**
 * A process-wide signal "this user's row changed (or is gone)". Repositories are created wherever a
 * service is needed, with nothing but a database handle, so they cannot reach an app's decorators;
 * whatever keeps users in memory (the session plugin's short cache) listens here instead. Announced
 * after the write; inside a transaction that is before the commit, which listeners must allow for.
 */
export const userChanges = createEventBus<{ changed: number }>()

export const announceUserChanged = (userId: number) => userChanges.emit('changed', userId)
