import type { Db } from '../../db/client.ts'
import type { Clock } from '../../lib/clock.ts'
import { notFound, ValidationError } from '../../lib/errors.ts'
import type { EventBus } from '../../lib/events.ts'
import { jsonBytes, unstorableJson } from '../../lib/json-document.ts'
import type { ServiceEvents } from '../../plugins/events.ts'
import { presentActivity } from './activities.presenters.ts'
import { createActivitiesRepository } from './activities.repository.ts'
import {
  type Activity,
  type ActivityBody,
  MAX_PAYLOAD_BYTES,
  MAX_PAYLOAD_DEPTH,
} from './activities.schemas.ts'

declare module '../../plugins/events.ts' {
  interface AppEvents {
    /** An activity was written to a user's log (after it is stored). */
    ActivityLogged: { userId: number; activity: Activity }
  }
}

const payloadError = (message: string) =>
  ValidationError.withMessages({ payload: [`The payload field ${message}`] })

// Laravel's ModelNotFoundException text, as route model binding answers a missing or foreign row.
const activityNotFound = (id: number) => notFound(`No query results for model [App\\Models\\Activity] ${id}`)

/** The user's activity log: it records what happened and never touches credits. */
export function createActivitiesService({
  db,
  clock,
  events,
}: {
  db: Db
  clock: Clock
  events: EventBus<ServiceEvents>
}) {
  const repo = createActivitiesRepository({ db })
  return {
    /** The user's newest `limit` activities, newest first. */
    async latest(userId: number, limit: number): Promise<Activity[]> {
      return (await repo.latest(userId, limit)).map(presentActivity)
    },

    /** Stores an activity and emits `ActivityLogged`; a payload too large or unstorable is a 422. */
    async log(userId: number, input: ActivityBody): Promise<Activity> {
      const payload = input.payload ?? null
      if (payload) {
        const problem = unstorableJson(payload, MAX_PAYLOAD_DEPTH)
        if (problem) throw payloadError(problem)
        if (jsonBytes(payload) > MAX_PAYLOAD_BYTES) {
          throw payloadError(`must not be greater than ${MAX_PAYLOAD_BYTES / 1024} kilobytes.`)
        }
      }
      const now = clock.now()
      const row = await repo.insert({
        userId,
        type: input.type,
        description: input.description ?? null,
        symbol: input.symbol ?? null,
        brokerAccountHash: input.broker_account_hash ?? null,
        brokerOrderId: input.broker_order_id ?? null,
        advancedOrderType: input.advanced_order_type ?? null,
        payload,
        createdAt: now,
        updatedAt: now,
      })
      const activity = presentActivity(row)
      events.emit('ActivityLogged', { userId, activity })
      return activity
    },

    /** Deletes one of the user's own activities; anyone else's (or none) is a 404. */
    async delete(userId: number, id: number): Promise<void> {
      if (!(await repo.deleteOwned(userId, id))) throw activityNotFound(id)
    },
  }
}
export type ActivitiesService = ReturnType<typeof createActivitiesService>
