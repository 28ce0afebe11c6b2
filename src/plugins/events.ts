import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { CreditHoldRow } from '../db/schema/index.ts'
import { createEventBus, type EventBus } from '../lib/events.ts'
import type { SessionRef } from '../lib/sessions/session-store.ts'

/**
 * The application's named events (the spec's "Application events"), name -> payload. A module that
 * owns an event may declare it next to the code that emits it, by declaration merging:
 *   declare module '../../plugins/events.ts' { interface AppEvents { ActivityLogged: {...} } }
 * (activities does so for `ActivityLogged`). The rest are typed here so emitters and listeners agree
 * before their modules exist. Payloads carry ids and safe fields only: never a token or a secret.
 *
 * The spec's mail names are mails, not events: each is a message its module writes to the outbox
 * with `app.mailer.queue(mail, tx)` in the transaction of the change that causes it —
 * `ContactFormSubmitted`, `SupportRequested`, `IssueReported` (support), `InviteUserMail` (chat
 * invites), `UserCreated`, `UserRoleChanged`, `UserBlockedUnblocked` (admin users).
 */
export interface AppEvents {
  /** A group owner or admin accepted or declined a request to join a group. */
  JoinRequestResponded: {
    joinRequestId: number
    groupId: number
    /** Who asked to join. */
    userId: number
    respondedBy: number
    accepted: boolean
    status: 'approved' | 'declined'
  }
  /**
   * An AI call finished: an agent's answer (`groupId` null; `userId` null for a guest) or a chat
   * analysis, whose answer is stored as `messageId`.
   */
  AiCallCompleted: {
    aiCallId: number
    userId: number | null
    groupId: number | null
    messageId: number | null
    agent: string
    inputTokens: number
    outputTokens: number
    durationMs: number
  }
  /** An AI call failed or was aborted; `reason` is safe to show (no provider detail, no credential). */
  AiCallFailed: {
    aiCallId: number
    userId: number | null
    groupId: number | null
    agent: string
    /** `aborted`: the client went away, or a chat analysis's answer was no longer wanted. */
    status: 'failed' | 'aborted'
    reason: string
    /** A chat analysis try that will be made again: not yet a failure to tell the group about. */
    willRetry: boolean
  }
  /** A group was deleted; `memberIds` are who belonged to it, for fan-out after the rows are gone. */
  GroupDeleted: { groupId: number; deletedBy: number; memberIds: number[] }
  /** A message was deleted from a group; `senderId` is its author (null: assistant, system, deleted account). */
  MessageDeleted: {
    messageId: number
    senderId: number | null
    groupId: number
    deletedBy: number
  }
  /** A member left a group (or their account was deleted); `memberCount` is the group's count after. */
  UserLeftGroup: { groupId: number; userId: number; memberCount: number }
  /**
   * A chat message to push to its group in real time (user, assistant and system messages alike);
   * `message` is its JSON exactly as the API presents it, so a view updates without another request.
   */
  SocketMessage: {
    messageId: number
    senderId: number | null
    groupId: number
    message: Record<string, unknown>
  }
  /** A user's broker token changed (stored or cleared); the token itself never travels in an event. */
  TokenUpdatedEvent: { userId: number; brokerAccountHash: string | null; expiresAt: Date | null }
}

/**
 * The events the service's domains tell each other that the spec does not name: consequences of a
 * change another domain carries out (see docs/ARCHITECTURE.md, "How consequences travel").
 */
export interface InternalEvents {
  /** A user's row changed or is gone (announced by the users repository, the table's one writer). */
  UserChanged: { userId: number }
  /** A credit hold was placed, captured, released or moved to another order; `hold` is its row after. */
  CreditHoldChanged: {
    userId: number
    hold: CreditHoldRow
    transition: 'created' | 'captured' | 'released' | 'transferred'
    /** A release by the expiry sweep (HOLD_TTL_HOURS), not by a request. */
    expired?: boolean
  }
  /** A hold was refused for want of spendable credits. */
  CreditHoldRefused: { userId: number }
  /**
   * A user's password changed (committed): their sessions end, all but `kept` (the session that
   * changed it, which stays signed in). Published: the change's answer waits for it.
   */
  PasswordChanged: { userId: number; kept: SessionRef | null }
  /** An account was deleted (committed): what it still holds open ends. Published, as above. */
  AccountDeleted: { userId: number }
}

/** Everything that travels on `app.events`. */
export type ServiceEvents = AppEvents & InternalEvents

declare module 'fastify' {
  interface FastifyInstance {
    events: EventBus<ServiceEvents>
  }
}

/** `app.events`: the in-process bus; a failing listener is logged, never fails the request. */
async function eventsPlugin(app: FastifyInstance) {
  app.decorate(
    'events',
    createEventBus<ServiceEvents>((err, name) =>
      app.log.error({ err, event: name }, 'event listener failed'),
    ),
  )
}

export default fp(eventsPlugin, { name: 'events' })
