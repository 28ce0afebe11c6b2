import { createWindowCounter } from './window-counter.ts'

// A user's sockets share one budget, so more tabs do not mean more whispers; a channel's members
// together get a larger one, which caps what any member receives whoever sends.
export const CLIENT_EVENTS_PER_USER_PER_SECOND = 10
export const CLIENT_EVENTS_PER_CHANNEL_PER_SECOND = 50

/** The per-sender and per-channel budgets of client events (whispers) on this instance. */
export function createClientEventLimits() {
  const perSender = createWindowCounter(1000)
  const perChannel = createWindowCounter(1000)
  return {
    /** Counts a client event from `sender` (a user, or a lone socket) on `channel`: true if both budgets allow it. */
    allow(sender: string, channel: string, now: number): boolean {
      return (
        perSender.take(sender, now) <= CLIENT_EVENTS_PER_USER_PER_SECOND &&
        perChannel.take(channel, now) <= CLIENT_EVENTS_PER_CHANNEL_PER_SECOND
      )
    },
    prune(now: number): void {
      perSender.prune(now)
      perChannel.prune(now)
    },
  }
}
