import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import { describe, expect, it } from 'vitest'
import { buildTestApp } from '../../test/helpers/build-test-app.ts'
import { SmtpSink } from '../../test/helpers/smtp-sink.ts'
import { appUnderTest, mailSinkUnderTest } from '../../test/helpers/under-test.ts'
import { outbox } from '../db/schema/index.ts'
import { renderMail } from '../lib/mail/message.ts'

const content = {
  subject: 'Hello <there>',
  greeting: 'Hi Ada & co,',
  lines: ['Your <b>strategy</b> is ready.'],
  action: { label: 'Open it', url: 'https://app.example.com/s?a=1&b=2' },
  outro: ['Thanks.'],
}

describe('mailer over SMTP (MAIL_URL)', () => {
  const sink = mailSinkUnderTest()
  const t = appUnderTest(() => ({ env: { MAIL_URL: sink.url, MAIL_FROM: 'Desk <desk@trading.test>' } }))

  /** The outbox rows of the mails queued to `to`. */
  const outboxRowsTo = (to: string) =>
    t.database.db.select().from(outbox).where(sql`${outbox.payload}->>'to' = ${to}`)

  it('delivers a mail with a text part, an escaped HTML part and the MAIL_FROM sender', async () => {
    await t.app.mailer.send(renderMail('ada@example.com', content))
    const mail = await sink.waitForMailTo('ada@example.com', 0)
    expect(mail.subject).toBe('Hello <there>')
    expect(mail.from).toBe('desk@trading.test')
    expect(mail.text).toContain('Your <b>strategy</b> is ready.')
    expect(mail.text).toContain('Open it: https://app.example.com/s?a=1&b=2')
    expect(mail.html).toContain('Your &lt;b&gt;strategy&lt;/b&gt; is ready.')
    expect(mail.html).not.toContain('<b>strategy</b>')
    expect(mail.html).toContain('href="https://app.example.com/s?a=1&amp;b=2"')
  })

  it('queue() writes the mail to the outbox, body sealed, and the worker delivers it once', async () => {
    const before = sink.mails.length
    await t.app.mailer.queue(renderMail('queued@example.com', content))
    const mail = await sink.waitForMailTo('queued@example.com', 0)
    expect(mail.text).toContain('Your <b>strategy</b> is ready.')
    await t.app.outbox.drain() // the pass that sent it has marked it
    const [row] = await outboxRowsTo('queued@example.com')
    expect(row).toMatchObject({ kind: 'mail', attempts: 1, lastError: null, failedAt: null })
    expect(row?.sentAt).toBeInstanceOf(Date)
    // Recipient and subject stay readable for operators; the body (links, tokens) does not.
    expect(row?.payload).toEqual({
      to: 'queued@example.com',
      subject: 'Hello <there>',
      sealed: expect.any(String),
    })
    expect(JSON.stringify(row?.payload)).not.toContain('app.example.com')
    expect(sink.mails.length).toBe(before + 1)
  })

  it('queue(mail, tx) exists only if the transaction commits', async () => {
    await expect(
      t.database.db.transaction(async (tx) => {
        await t.app.mailer.queue(renderMail('rolled-back@example.com', content), tx)
        throw new Error('the change failed')
      }),
    ).rejects.toThrow('the change failed')
    await t.database.db.transaction(async (tx) => {
      await t.app.mailer.queue(renderMail('committed@example.com', content), tx)
    })
    await sink.waitForMailTo('committed@example.com', 0)
    await t.app.outbox.drain()
    expect(await outboxRowsTo('rolled-back@example.com')).toEqual([])
    expect(sink.to('rolled-back@example.com')).toEqual([])
    expect(sink.to('committed@example.com')).toHaveLength(1)
  })

  it('send() rejects when the SMTP server is down; queue() still succeeds and keeps the mail', async () => {
    const down = new SmtpSink()
    await down.start()
    const app = await buildTestApp({ env: { MAIL_URL: down.url } })
    await down.stop()
    try {
      await expect(app.app.mailer.send(renderMail('x@example.com', content))).rejects.toThrow()
      await expect(app.app.mailer.queue(renderMail('x@example.com', content))).resolves.toBeUndefined()
      await app.app.outbox.drain()
      const rows = await app.database.db.select().from(outbox)
      expect(rows).toMatchObject([
        { attempts: 1, sentAt: null, failedAt: null, lastError: expect.any(String) },
      ])
    } finally {
      await app.close()
    }
  })
})

describe('mailer without MAIL_URL', () => {
  it('writes each queued mail as an .eml file under DATA_DIR/mail', async () => {
    const t = await buildTestApp()
    try {
      await t.app.mailer.queue(renderMail('file@example.com', content))
      await t.app.outbox.drain()
      const dir = join(t.config.dataDir, 'mail')
      const files = readdirSync(dir).filter((f) => f.endsWith('.eml'))
      expect(files).toHaveLength(1)
      const eml = readFileSync(join(dir, files[0] as string), 'utf8')
      expect(eml).toContain('To: file@example.com')
      expect(eml).toContain('Subject: Hello <there>')
      expect(eml).toContain('text/plain')
      expect(eml).toContain('text/html')
    } finally {
      await t.close()
    }
  })
})
