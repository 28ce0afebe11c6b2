import type { FastifyInstance } from 'fastify'
import groupsRoutes from './groups/groups.routes.ts'
import invitesRoutes from './invites/invites.routes.ts'
import joinRequestsRoutes from './join-requests/join-requests.routes.ts'
import messagesRoutes from './messages/messages.routes.ts'
import peopleRoutes from './people/people.routes.ts'

/** The spec's chat section: groups, invites, join requests, messages, sidebar, fellow users. */
export default async function chatRoutes(app: FastifyInstance) {
  const { groups, invites, joinRequests, messages, people } = app.services
  await app.register(groupsRoutes, { groups })
  await app.register(invitesRoutes, { invites })
  await app.register(joinRequestsRoutes, { joinRequests })
  await app.register(messagesRoutes, { messages })
  await app.register(peopleRoutes, { people })
}
