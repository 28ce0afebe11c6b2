import { randomUUID } from 'node:crypto'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import nodemailer from 'nodemailer'
import type { Config } from '../config.ts'
import type { MailMessage } from '../lib/mail/message.ts'

export interface Mailer {
  /** Delivers now; rejects when the SMTP server (or the mail folder) refuses. */
  send(mail: MailMessage): Promise<void>
  /**
   * Delivers after the answer, so a slow or failing mail server neither delays nor fails the request
   * (nor tells, by timing, whether an account exists). Failures are logged; closing the app waits.
   */
  queue(mail: MailMessage): void
}

declare module 'fastify' {
  interface FastifyInstance {
    mailer: Mailer
  }
}

/** SMTP when MAIL_URL is set; otherwise each mail becomes an .eml file under DATA_DIR/mail. */
async function mailerPlugin(app: FastifyInstance, { config }: { config: Config }) {
  const mailDir = join(config.dataDir, 'mail')
  const transport = config.mail.url
    ? nodemailer.createTransport(config.mail.url)
    : nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' })
  const pending = new Set<Promise<void>>()

  const send = async (mail: MailMessage) => {
    const info = await transport.sendMail({ from: config.mail.from, ...mail })
    if (config.mail.url) return
    await mkdir(mailDir, { recursive: true })
    const file = join(mailDir, `${new Date().toISOString().replace(/[:.]/g, '-')}-${randomUUID()}.eml`)
    await writeFile(file, info.message as Buffer)
    app.log.info({ subject: mail.subject, file }, 'mail written to a file (MAIL_URL is not set)')
  }

  app.decorate('mailer', {
    send,
    queue(mail) {
      const delivery = send(mail)
        .catch((err) => app.log.error({ err, subject: mail.subject }, 'mail delivery failed'))
        .finally(() => pending.delete(delivery))
      pending.add(delivery)
    },
  } satisfies Mailer)

  app.addHook('onClose', async () => {
    await Promise.allSettled([...pending])
    transport.close()
  })
}

export default fp(mailerPlugin, { name: 'mailer' })
