import type { FastifyInstance } from 'fastify'
import type { AppEvents } from '../../src/plugins/events.ts'
import type { TestClient } from './client.ts'

/** Creates a group through the API as `client` (who owns it); answers the group JSON. */
export async function createGroup(
  client: TestClient,
  body: { name?: string; description?: string; is_private?: boolean } = {},
) {
  const res = await client.post('/api/group', { name: 'Swing traders', ...body })
  if (res.status !== 201) throw new Error(`group create answered ${res.status} ${res.text}`)
  return res.data.data as {
    id: number
    name: string
    is_private: boolean
    owner_id: number
    member_count: number
  }
}

/** Makes `client` a member of a public group through the API. */
export async function joinGroup(client: TestClient, groupId: number) {
  const res = await client.post(`/api/group/${groupId}/join`)
  if (res.status !== 200 || res.data.data.status !== 'member') {
    throw new Error(`join answered ${res.status} ${res.text}`)
  }
}

/** Posts a text message as `client`; answers the message JSON. */
export async function postMessage(client: TestClient, groupId: number, body: string) {
  const res = await client.post('/api/message', { group_id: groupId, body })
  if (res.status !== 201) throw new Error(`message post answered ${res.status} ${res.text}`)
  return res.data.data as { id: number; group_id: number; kind: string; body: string }
}

export type Recorded = { [K in keyof AppEvents]: { name: K; payload: AppEvents[K] } }[keyof AppEvents]

/** Records every emit of the named events on the app's bus, in order; `stop()` unsubscribes. */
export function recordEvents(app: FastifyInstance, names: (keyof AppEvents)[]) {
  const events: Recorded[] = []
  const stops = names.map((name) =>
    app.events.on(name, (payload) => {
      events.push({ name, payload } as Recorded)
    }),
  )
  return {
    events,
    of: <K extends keyof AppEvents>(name: K) =>
      events.filter((event) => event.name === name).map((event) => event.payload as AppEvents[K]),
    clear: () => events.splice(0),
    stop: () => {
      for (const stop of stops) stop()
    },
  }
}
