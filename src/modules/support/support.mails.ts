import type { SupportTicketRow } from '../../db/schema/index.ts'
import { type MailMessage, renderMail } from '../../lib/mail/message.ts'

// A subject is one header line: whatever line breaks were typed become spaces.
const oneLine = (text: string) => text.replace(/\s+/g, ' ')

const TITLES = {
  contact: 'Contact form',
  support: 'Support request',
  issue: 'Issue report',
} as const

function staffSubject(ticket: SupportTicketRow): string {
  const severity = ticket.kind === 'issue' && ticket.severity ? ` (${ticket.severity})` : ''
  return `[${TITLES[ticket.kind]}${severity}] ${oneLine(ticket.subject)}`
}

/**
 * ContactFormSubmitted, SupportRequested or IssueReported: the whole ticket to the support desk,
 * answerable straight to the sender (Reply-To). renderMail escapes what they typed.
 */
export function supportDeskMail(ticket: SupportTicketRow, supportEmail: string): MailMessage {
  const details = [
    `From: ${ticket.name} <${ticket.email}>${ticket.userId ? ` (user #${ticket.userId})` : ' (not signed in)'}`,
    ...(ticket.category ? [`Category: ${ticket.category}`] : []),
    ...(ticket.severity ? [`Severity: ${ticket.severity}`] : []),
    ...(ticket.pageUrl ? [`Page: ${ticket.pageUrl}`] : []),
    `Subject: ${ticket.subject}`,
  ]
  return {
    ...renderMail(supportEmail, {
      subject: staffSubject(ticket),
      greeting: `${TITLES[ticket.kind]} #${ticket.id}`,
      lines: [details.join('\n'), ticket.message],
      outro: [
        `Sent from ${ticket.ipAddress ?? 'an unknown address'} with ${ticket.userAgent ?? 'an unknown browser'}.`,
      ],
    }),
    replyTo: ticket.email,
  }
}

/**
 * The sender's receipt, which repeats nothing the sender typed (subject, message, name): otherwise
 * the service could be made to mail someone's text to a stranger. Signed-in senders get it only at a
 * verified address (see the service); the contact form's address is never verified.
 */
export function supportReceiptMail(ticket: SupportTicketRow): MailMessage {
  if (ticket.kind === 'contact') {
    return renderMail(ticket.email, {
      subject: 'We received your message',
      lines: [
        'Thank you for contacting us. We received your message and will answer at this address as soon as we can.',
        'If you did not write to us, you can ignore this email.',
      ],
    })
  }
  const what = ticket.kind === 'issue' ? 'issue report' : 'support request'
  return renderMail(ticket.email, {
    subject: `We received your ${what} #${ticket.id}`,
    lines: [
      `Thank you. We received your ${what} (reference #${ticket.id}) and will answer at this address as soon as we can.`,
    ],
  })
}
