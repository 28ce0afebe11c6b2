import { randomUUID } from 'node:crypto'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { Transporter } from 'nodemailer'
import type { Config } from '../config.ts'
import type { Db } from '../db/client.ts'
import { decryptSecret, encryptSecret } from '../lib/encryption.ts'
import type { MailMessage } from '../lib/mail/message.ts'

export interface Mailer {
  /** Delivers now; rejects when the SMTP server (or the mail folder) refuses. The outbox worker's tool. */
  send(mail: MailMessage): Promise<void>
  /**
   * Writes the mail to the outbox through `tx` (or the app's database): passed the caller's
   * transaction, the mail exists if and only if the change that causes it commits. The outbox worker
   * sends it after the answer with retries, so a slow or failing mail server neither delays nor fails
   * the request (nor tells, by timing, whether an account exists), and loses nothing.
   */
  queue(mail: MailMessage, tx?: Db): Promise<void>
}

declare module 'fastify' {
  interface FastifyInstance {
    mailer: Mailer
  }
}

/**
 * A queued mail as its outbox row holds it: recipient and subject readable for operators, the rest
 * (bodies with reset and verification links) sealed under APP_KEY, so the table holds no usable token.
 */
interface QueuedMail extends Record<string, unknown> {
  to: string
  subject: string
  sealed: string
}

/** SMTP when MAIL_URL is set; otherwise each mail becomes an .eml file under DATA_DIR/mail. */
async function mailerPlugin(app: FastifyInstance, { config }: { config: Config }) {
  const mailDir = join(config.dataDir, 'mail')
  // nodemailer is loaded, and the transport made, by the first mail sent rather than at every start.
  let transport: Promise<Transporter> | undefined
  const createTransport = async (): Promise<Transporter> => {
    const { default: nodemailer } = await import('nodemailer')
    return config.mail.url
      ? // Bounded well inside the outbox lease, so a hanging server cannot outlive a claim.
        nodemailer.createTransport({
          url: config.mail.url,
          connectionTimeout: 10_000,
          greetingTimeout: 10_000,
          socketTimeout: 30_000,
        })
      : nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' })
  }

  const send = async (mail: MailMessage) => {
    transport ??= createTransport()
    const info = await (await transport).sendMail({ from: config.mail.from, ...mail })
    if (config.mail.url) return
    await mkdir(mailDir, { recursive: true })
    const file = join(mailDir, `${new Date().toISOString().replace(/[:.]/g, '-')}-${randomUUID()}.eml`)
    await writeFile(file, info.message as Buffer)
    app.log.info({ subject: mail.subject, file }, 'mail written to a file (MAIL_URL is not set)')
  }

  app.outbox.handle('mail', async (payload) => {
    const { sealed } = payload as QueuedMail
    await send(JSON.parse(decryptSecret(sealed, config.appKey)) as MailMessage)
  })

  app.decorate('mailer', {
    send,
    async queue(mail, tx) {
      const row: QueuedMail = {
        to: mail.to,
        subject: mail.subject,
        sealed: encryptSecret(JSON.stringify(mail), config.appKey),
      }
      await app.outbox.enqueue('mail', row, tx)
    },
  } satisfies Mailer)

  app.addHook('onClose', async () => {
    await transport?.then(
      (made) => made.close(),
      () => {},
    )
  })
}

export default fp(mailerPlugin, { name: 'mailer', dependencies: ['outbox'] })
