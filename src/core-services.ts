import type { Config } from './config.ts'
import type { Db } from './db/client.ts'
import type { Clock } from './lib/clock.ts'
import type { EventBus } from './lib/events.ts'
import { createKnowledgeBaseService } from './modules/knowledge-base/knowledge-base.service.ts'
import { forgetLegacyCredentials } from './modules/laravel-import/legacy-remember.ts'
import { createTwoFactorService } from './modules/two-factor/two-factor.service.ts'
import { createUsersService } from './modules/users/users.service.ts'
import type { ServiceEvents } from './plugins/events.ts'

/** What the services that need no request machinery are built on: enough for the CLI. */
export interface CoreInfrastructure {
  config: Config
  db: Db
  clock: Clock
  events: EventBus<ServiceEvents>
}

/**
 * The services every process builds the same way, the CLI's included: the users service and what
 * hangs on it alone. One instance each; a transaction's view of one is `service.within(tx)`.
 */
export function buildCoreServices({ config, db, clock, events }: CoreInfrastructure) {
  // A password change ends what the Laravel original's remember cookies let in, in its transaction.
  const users = createUsersService({ db, clock, events, passwordReplaced: forgetLegacyCredentials })
  return {
    users,
    twoFactor: createTwoFactorService({ users, clock, appKey: config.appKey }),
    knowledgeBase: createKnowledgeBaseService({ db, clock }),
  }
}
