import type { AddressInfo } from 'node:net'
import { type ParsedMail, simpleParser } from 'mailparser'
import { SMTPServer } from 'smtp-server'

export interface ReceivedMail {
  from: string
  to: string[]
  subject: string
  text: string
  html: string
  parsed: ParsedMail
}

/**
 * A real SMTP server on a loopback port that keeps every mail it receives, parsed. Point the app at
 * it with `MAIL_URL: sink.url`. It can be stopped and started again on the same port.
 */
export class SmtpSink {
  readonly mails: ReceivedMail[] = []
  private server: SMTPServer | null = null
  private port = 0
  private waiters: Array<() => void> = []

  get url(): string {
    return `smtp://127.0.0.1:${this.port}`
  }

  async start(): Promise<this> {
    const server = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS', 'AUTH'],
      logger: false,
      onData: (stream, session, callback) => {
        simpleParser(stream)
          .then((parsed) => {
            this.mails.push({
              from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
              to: session.envelope.rcptTo.map((r) => r.address),
              subject: parsed.subject ?? '',
              text: parsed.text ?? '',
              html: typeof parsed.html === 'string' ? parsed.html : '',
              parsed,
            })
            for (const wake of this.waiters.splice(0)) wake()
            callback()
          })
          .catch(callback)
      },
    })
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(this.port, '127.0.0.1', () => resolve())
    })
    this.port = (server.server.address() as AddressInfo).port
    this.server = server
    return this
  }

  async stop(): Promise<void> {
    const server = this.server
    this.server = null
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()))
  }

  /** Mails sent to `to` (any case), in arrival order. */
  to(address: string): ReceivedMail[] {
    return this.mails.filter((m) => m.to.some((t) => t.toLowerCase() === address.toLowerCase()))
  }

  /** Waits until a mail matching `match` has arrived and returns the latest such mail. */
  async waitFor(match: (mail: ReceivedMail) => boolean, timeoutMs = 10_000): Promise<ReceivedMail> {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const found = this.mails.filter(match).at(-1)
      if (found) return found
      const left = deadline - Date.now()
      if (left <= 0) throw new Error(`no matching mail within ${timeoutMs} ms (got ${this.mails.length})`)
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left)
        this.waiters.push(() => {
          clearTimeout(timer)
          resolve()
        })
      })
    }
  }

  /** Waits for the next mail to `address` beyond the `already` it had, and returns it. */
  async waitForMailTo(address: string, already = this.to(address).length, timeoutMs?: number) {
    await this.waitFor(() => this.to(address).length > already, timeoutMs)
    return this.to(address)[already] as ReceivedMail
  }
}
