import type { Db } from '../../db/client.ts'
import type { SupportKind, UserRow } from '../../db/schema/index.ts'
import type { Clock } from '../../lib/clock.ts'
import type { MailMessage } from '../../lib/mail/message.ts'
import { supportDeskMail, supportReceiptMail } from './support.mails.ts'
import { createSupportRepository } from './support.repository.ts'
import type { ContactFormBody, ReportIssueBody, SupportRequestBody } from './support.schemas.ts'

/** Where a form came from, kept with the ticket for the support desk. */
export interface Origin {
  ipAddress: string | null
  userAgent: string | null
}

interface Ticket {
  kind: SupportKind
  userId: number | null
  name: string
  email: string
  subject: string
  message: string
  category?: string | null
  severity?: string | null
  pageUrl?: string | null
}

export function createSupportService(deps: {
  db: Db
  clock: Clock
  supportEmail: string
  /** Queues a mail in the transaction that stores the ticket (written with it, or not at all). */
  queueMail(mail: MailMessage, tx: Db): void | Promise<void>
}) {
  const { db, clock, supportEmail, queueMail } = deps

  /**
   * Stores the ticket and, in the same transaction, queues the desk's mail and, when `receipt`, the
   * sender's receipt.
   */
  const submit = (ticket: Ticket, origin: Origin, receipt = true) =>
    db.transaction(async (tx) => {
      const row = await createSupportRepository({ db: tx }).insert({
        ...ticket,
        // Empty optional fields are stored as absent, not as ''.
        category: ticket.category || null,
        severity: ticket.severity || null,
        pageUrl: ticket.pageUrl || null,
        ipAddress: origin.ipAddress?.slice(0, 45) ?? null,
        userAgent: origin.userAgent,
        createdAt: clock.now(),
      })
      await queueMail(supportDeskMail(row, supportEmail), tx)
      if (receipt) await queueMail(supportReceiptMail(row), tx)
    })

  return {
    /**
     * ContactFormSubmitted. A filled-in honeypot answers as if accepted (a bot learns nothing) but
     * stores and mails nothing; answers whether the message was taken.
     */
    async contact(input: ContactFormBody, user: UserRow | null, origin: Origin): Promise<boolean> {
      if (input.website) return false
      const { name, email, subject, message } = input
      await submit({ kind: 'contact', userId: user?.id ?? null, name, email, subject, message }, origin)
      return true
    },

    /** SupportRequested, from the signed-in user; the receipt only to a verified address. */
    async supportRequest(user: UserRow, input: SupportRequestBody, origin: Origin): Promise<void> {
      await submit(
        { kind: 'support', userId: user.id, name: user.name, email: user.email, ...input },
        origin,
        user.emailVerifiedAt !== null,
      )
    },

    /** IssueReported, from the signed-in user; the receipt only to a verified address. */
    async reportIssue(user: UserRow, input: ReportIssueBody, origin: Origin): Promise<void> {
      const { page_url: pageUrl, ...rest } = input
      await submit(
        { kind: 'issue', userId: user.id, name: user.name, email: user.email, ...rest, pageUrl },
        origin,
        user.emailVerifiedAt !== null,
      )
    },
  }
}

export type SupportService = ReturnType<typeof createSupportService>
