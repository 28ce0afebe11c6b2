import { type MailMessage, renderMail } from '../../../lib/mail/message.ts'

/**
 * InviteUserMail: who invites the address to which group, with the link to accept. The subject
 * repeats nothing a user typed (names are chosen by whoever signs up), so that it cannot carry spam.
 */
export function inviteUserMail(input: {
  to: string
  groupName: string
  inviterName: string
  url: string
  expiresAt: Date
}): MailMessage {
  return renderMail(input.to, {
    subject: 'You have been invited to join a chat group',
    lines: [`${input.inviterName} invited you to join the chat group "${input.groupName}".`],
    action: { label: 'Accept the invitation', url: input.url },
    outro: [
      `This invitation expires on ${input.expiresAt.toUTCString()}.`,
      'If you did not expect it, you can ignore this email.',
    ],
  })
}
