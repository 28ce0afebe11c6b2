import type { TestApp } from './build-test-app.ts'
import { type ClientResponse, TestClient } from './client.ts'
import type { SmtpSink } from './smtp-sink.ts'

/**
 * A password reset as its owner does it: asks for the link over HTTP, reads it from the mail that
 * arrives in `sink`, and posts the new password with its token. Answers the reset's answer.
 */
export async function resetPasswordByMail(
  t: TestApp,
  sink: SmtpSink,
  email: string,
  password: string,
): Promise<ClientResponse> {
  const asked = await new TestClient(t.baseUrl).post('/api/password/email', { email })
  if (asked.status !== 200) throw new Error(`forgot-password answered ${asked.status}`)
  const mail = await sink.waitFor((m) => m.to.includes(email) && m.subject === 'Reset Password Notification')
  const link = mail.text.match(/http\S+\/reset-password\?\S+/)?.[0]
  if (!link) throw new Error(`no reset link in: ${mail.text}`)
  return new TestClient(t.baseUrl).post('/api/password/reset', {
    token: new URL(link).searchParams.get('token'),
    email,
    password,
    password_confirmation: password,
  })
}
