import type { UserRow } from '../../../db/schema/index.ts'
import { type MailMessage, renderMail } from '../../../lib/mail/message.ts'

// The spec's mail names (Events table); the password the admin chose is never mailed.

/** UserCreated: an admin opened an account for this address; the link verifies it. */
export function userCreatedMail(user: UserRow, verificationUrl: string): MailMessage {
  return renderMail(user.email, {
    subject: 'Your account has been created',
    greeting: `Hello ${user.name}!`,
    lines: [
      `An administrator created a Trading App account for you with this email address (${user.email}).`,
      'Sign in with the password your administrator gives you, or choose your own with "Forgot your password?" on the sign-in page.',
      'Please confirm that this address is yours:',
    ],
    action: { label: 'Verify Email Address', url: verificationUrl },
    outro: ['This link expires in 60 minutes; once signed in you can ask for a new one.'],
  })
}

/** UserBlockedUnblocked: the account was blocked (or is open again). */
export function userBlockedUnblockedMail(user: UserRow): MailMessage {
  const blocked = user.blockedAt !== null
  return renderMail(user.email, {
    subject: blocked ? 'Your account has been blocked' : 'Your account has been unblocked',
    greeting: `Hello ${user.name}!`,
    lines: blocked
      ? [
          'An administrator has blocked your Trading App account. You have been signed out and cannot sign in until it is unblocked.',
          'If you think this is a mistake, please contact support.',
        ]
      : ['An administrator has unblocked your Trading App account. You can sign in again.'],
  })
}

/** UserRoleChanged: the user became an admin, or stopped being one. */
export function userRoleChangedMail(user: UserRow): MailMessage {
  return renderMail(user.email, {
    subject: 'Your role has been changed',
    greeting: `Hello ${user.name}!`,
    lines: [
      user.isAdmin
        ? 'An administrator has made you an administrator of Trading App.'
        : 'An administrator has changed your Trading App role to user: you no longer have administrator access.',
    ],
  })
}

/** An administrator set the account's password (never mailed); the user was signed out everywhere. */
export function adminPasswordChangedMail(user: UserRow): MailMessage {
  return renderMail(user.email, {
    subject: 'Your password has been changed',
    greeting: `Hello ${user.name}!`,
    lines: [
      'An administrator has set a new password for your Trading App account, and you have been signed out everywhere.',
      'Sign in with the password your administrator gives you, or choose your own with "Forgot your password?" on the sign-in page.',
    ],
    outro: ['If you did not ask for this, please contact support.'],
  })
}
