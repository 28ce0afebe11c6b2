import type { FastifyInstance } from 'fastify'
import type { Config } from '../../config.ts'
import { queueAnalysis } from '../ai/analysis/analysis-requests.ts'
import { configuredModelName } from '../ai/model.ts'
import { createAccountRelease } from './account-release.ts'
import groupsRoutes from './groups/groups.routes.ts'
import { type ChatDeps, createGroupsService } from './groups/groups.service.ts'
import invitesRoutes from './invites/invites.routes.ts'
import { createInvitesService } from './invites/invites.service.ts'
import joinRequestsRoutes from './join-requests/join-requests.routes.ts'
import { createJoinRequestsService } from './join-requests/join-requests.service.ts'
import messagesRoutes from './messages/messages.routes.ts'
import { createMessagesService } from './messages/messages.service.ts'
import peopleRoutes from './people/people.routes.ts'
import { createPeopleService } from './people/people.service.ts'

/** What the chat services need from the app. */
export const chatDeps = (app: FastifyInstance, config: Config): ChatDeps => ({
  db: app.db,
  clock: app.clock,
  appUrl: config.appUrl,
  events: app.events,
  storage: app.storage,
  log: app.log,
  presence: app.realtime,
  askAi: (tx, question) =>
    queueAnalysis(tx, app.outbox, { ...question, model: configuredModelName(config), at: app.clock.now() }),
})

/**
 * What deleting an account does to chat, in the deletion's transaction (see the groups service):
 * for the profile and admin modules, which delete accounts.
 */
export const chatAccountRelease = (app: FastifyInstance, config: Config) =>
  createAccountRelease(chatDeps(app, config))

/** The spec's chat section: groups, invites, join requests, messages, sidebar, fellow users. */
export default async function chatRoutes(app: FastifyInstance, { config }: { config: Config }) {
  const deps = chatDeps(app, config)
  await app.register(groupsRoutes, { groups: createGroupsService(deps) })
  await app.register(invitesRoutes, {
    invites: createInvitesService({
      ...deps,
      inviteBaseUrl: config.frontendOrigins[0] ?? config.appUrl,
      queueMail: (mail, tx) => app.mailer.queue(mail, tx),
    }),
  })
  await app.register(joinRequestsRoutes, { joinRequests: createJoinRequestsService(deps) })
  await app.register(messagesRoutes, { messages: createMessagesService(deps) })
  await app.register(peopleRoutes, {
    people: createPeopleService(deps),
  })
}
