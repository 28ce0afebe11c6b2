import type { Config } from './config.ts'
import type { Db } from './db/client.ts'
import type { Clock } from './lib/clock.ts'
import type { EventBus } from './lib/events.ts'
import { createHoldsService } from './modules/credits/holds/holds.service.ts'
import { createLedgerService } from './modules/credits/ledger.service.ts'
import { createKnowledgeBaseService } from './modules/knowledge-base/knowledge-base.service.ts'
import { createCreditsImportService } from './modules/laravel-import/credits-import.service.ts'
import { createLaravelImportService } from './modules/laravel-import/laravel-import.service.ts'
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
 * hangs on it alone, the credits ledger with its holds, and the Laravel imports (CLI commands) that
 * write through them. One instance each; a transaction's view of one is `service.within(tx)`, or a
 * `tx` argument.
 */
export function buildCoreServices({ config, db, clock, events }: CoreInfrastructure) {
  // A password change ends what the Laravel original's remember cookies let in, in its transaction.
  const users = createUsersService({ db, clock, events, passwordReplaced: forgetLegacyCredentials })
  const twoFactor = createTwoFactorService({ users, clock, appKey: config.appKey })
  const ledger = createLedgerService({ db, clock, queueWaitMs: config.databaseTimeouts.lockMs })
  const holds = createHoldsService({
    db,
    clock,
    events,
    ledger,
    holdDefault: config.credits.holdDefault,
    holdTtlHours: config.credits.holdTtlHours,
  })
  return {
    users,
    twoFactor,
    knowledgeBase: createKnowledgeBaseService({ db, clock }),
    ledger,
    holds,
    laravelImport: createLaravelImportService({
      db,
      clock,
      users,
      twoFactor,
      appKey: config.appKey,
      sessionLifetimeMinutes: config.session.lifetimeMinutes,
    }),
    laravelCredits: createCreditsImportService({
      db,
      clock,
      users,
      ledger,
      holds,
      holdTtlHours: config.credits.holdTtlHours,
    }),
  }
}
