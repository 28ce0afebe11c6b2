import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildTestApp, type TestApp } from '../../test/helpers/build-test-app.ts'
import { SmtpSink } from '../../test/helpers/smtp-sink.ts'
import { renderMail } from '../lib/mail/message.ts'

const content = {
  subject: 'Hello <there>',
  greeting: 'Hi Ada & co,',
  lines: ['Your <b>strategy</b> is ready.'],
  action: { label: 'Open it', url: 'https://app.example.com/s?a=1&b=2' },
  outro: ['Thanks.'],
}

describe('mailer over SMTP (MAIL_URL)', () => {
  let sink: SmtpSink
  let t: TestApp
  beforeAll(async () => {
    sink = await new SmtpSink().start()
    t = await buildTestApp({ env: { MAIL_URL: sink.url, MAIL_FROM: 'Desk <desk@trading.test>' } })
  })
  afterAll(async () => {
    await t.close()
    await sink.stop()
  })

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

  it('queue() delivers after the call returns and app.close() waits for it', async () => {
    const other = await buildTestApp({ env: { MAIL_URL: sink.url } })
    other.app.mailer.queue(renderMail('queued@example.com', content))
    await other.close()
    expect(sink.to('queued@example.com')).toHaveLength(1)
  })

  it('send() rejects when the SMTP server is down; queue() only logs', async () => {
    const down = new SmtpSink()
    await down.start()
    const app = await buildTestApp({ env: { MAIL_URL: down.url } })
    await down.stop()
    try {
      await expect(app.app.mailer.send(renderMail('x@example.com', content))).rejects.toThrow()
      expect(() => app.app.mailer.queue(renderMail('x@example.com', content))).not.toThrow()
    } finally {
      await app.close()
    }
  })
})

describe('mailer without MAIL_URL', () => {
  it('writes each mail as an .eml file under DATA_DIR/mail', async () => {
    const t = await buildTestApp()
    try {
      await t.app.mailer.send(renderMail('file@example.com', content))
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
