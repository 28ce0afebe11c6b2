import { describe, expect, it } from 'vitest'
import { signedInClient } from '../test/helpers/factories.ts'
import { appUnderTest } from '../test/helpers/under-test.ts'
import type { Activity } from './modules/activities/activities.schemas.ts'

// Stand-ins handed to buildApp reach the routes: route plugins take their services from
// app.services, built once in src/services.ts, and build none of their own.
const standIn = (userId: number): Activity => ({
  id: 1,
  user_id: userId,
  type: 'stand-in',
  description: null,
  symbol: null,
  broker_account_hash: null,
  broker_order_id: null,
  advanced_order_type: null,
  payload: null,
  created_at: '2026-01-01T00:00:00.000000Z',
  updated_at: '2026-01-01T00:00:00.000000Z',
})

describe('app.services', () => {
  const asked: number[] = []
  const t = appUnderTest({
    services: {
      replace: (built) => ({
        activities: {
          ...built.activities,
          latest: async (userId: number) => {
            asked.push(userId)
            return [standIn(userId)]
          },
        },
      }),
    },
  })

  it("answers a route with the stand-in's service", async () => {
    const { client, user } = await signedInClient(t)
    const res = await client.get('/api/activities')
    expect(res.status).toBe(200)
    expect(res.data).toEqual({ data: [standIn(user.id)] })
    expect(asked).toEqual([user.id])
  })
})
