import type { Db } from '../../db/client.ts'
import type { Clock } from '../../lib/clock.ts'
import type { EventBus } from '../../lib/events.ts'
import type { FileStorage } from '../../lib/storage/storage.ts'
import type { ServiceEvents } from '../../plugins/events.ts'
import type { Realtime } from '../../plugins/realtime.ts'

/** What every chat service is built with (src/services.ts hands it in). */
export interface ChatDeps {
  db: Db
  clock: Clock
  /** APP_URL, the base of photo and attachment URLs. */
  appUrl: string
  events: EventBus<ServiceEvents>
  storage: FileStorage
  log: { warn(details: object, message: string): void }
  /** Who is online: a live socket on their own user channel (the real-time server knows). */
  presence: Pick<Realtime, 'online' | 'lastSeen'>
  /** Queues the AI analysis of a message posted with `ask_ai`, in the post's transaction. */
  askAi?: (tx: Db, question: { groupId: number; messageId: number }) => Promise<void>
  /**
   * Before a message with `ask_ai` is posted: a 422 on `ask_ai` when the asker's spendable credits
   * do not cover an AI market analysis (the credits module's meter, handed in by src/services.ts).
   */
  affordAi?: (userId: number) => Promise<void>
}
