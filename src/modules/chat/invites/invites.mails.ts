import { type MailMessage, renderMail } from '../../../lib/mail/message.ts'

// A subject is one header line: whatever line breaks a name holds become spaces.
const oneLine = (text: string) => text.replace(/\s+/g, ' ')

/** InviteUserMail: who invites the address to which group, with the link to accept. */
export function inviteUserMail(input: {
  to: string
  groupName: string
  inviterName: string
  url: string
  expiresAt: Date
}): MailMessage {
  return renderMail(input.to, {
    subject: oneLine(`${input.inviterName} invited you to join ${input.groupName}`),
    lines: [`${input.inviterName} invited you to join the chat group "${input.groupName}".`],
    action: { label: 'Accept the invitation', url: input.url },
    outro: [
      `This invitation expires on ${input.expiresAt.toUTCString()}.`,
      'If you did not expect it, you can ignore this email.',
    ],
  })
}
