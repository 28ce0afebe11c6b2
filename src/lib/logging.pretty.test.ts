import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PassThrough } from 'node:stream'
import { fileURLToPath } from 'node:url'
import pretty from 'pino-pretty'
import { describe, expect, it } from 'vitest'
import { createLoggers, prettyOptions, wantsPrettyLogs } from './logging.ts'

const root = fileURLToPath(new URL('../..', import.meta.url))
const nodeBin = join(root, 'node_modules/.bin/node')

describe('log format', () => {
  it('is pretty on a terminal outside production, JSON elsewhere, unless LOG_FORMAT says', () => {
    expect(wantsPrettyLogs(undefined, 'development', true)).toBe(true)
    expect(wantsPrettyLogs(undefined, 'development', false)).toBe(false)
    expect(wantsPrettyLogs(undefined, 'production', true)).toBe(false)
    expect(wantsPrettyLogs('json', 'development', true)).toBe(false)
    expect(wantsPrettyLogs('pretty', 'production', false)).toBe(true)
  })

  it('writes one readable line per entry, the access line as method, URL, status and time, secrets still redacted', () => {
    const out = new PassThrough()
    let written = ''
    out.on('data', (chunk: Buffer) => {
      written += chunk.toString()
    })
    const { app, access } = createLoggers('info', true, pretty(prettyOptions(out)))
    const fields = { request_id: 'r-1', method: 'GET', url: '/api/markets', status: 200, ms: 3.25 }
    access.info({ ...fields, ip: '127.0.0.1', user_id: 7 }, 'request completed')
    app.info({ request_id: 'r-2', body: { password: 'never-shown' } }, 'signed in')
    const lines = written.trimEnd().split('\n')
    expect(lines).toHaveLength(2)
    expect(lines[0]).toMatch(
      /^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: GET \/api\/markets 200 3\.25 ms .*"request_id":"r-1"/,
    )
    expect(lines[1]).toMatch(/INFO: signed in .*"password":"\[REDACTED\]"/)
    expect(written).not.toContain('never-shown')
    expect(written).not.toContain('"level"')
  })

  // The real thing: a process whose stdout is a terminal (util-linux `script` gives it one) or a pipe.
  const logOneLine = `
    import { createLoggers, wantsPrettyLogs } from ${JSON.stringify(join(root, 'src/lib/logging.ts'))}
    const { app } = createLoggers('info', wantsPrettyLogs(undefined, 'development'))
    app.info('hello from the service')`
  const run = (command: string, args: string[]) =>
    execFileSync(command, args, { encoding: 'utf8', env: { PATH: process.env.PATH ?? '' } })

  it('is chosen by whether stdout is a terminal', () => {
    const dir = mkdtempSync(join(tmpdir(), 'log-format-'))
    try {
      const script = join(dir, 'log-one-line.mjs')
      writeFileSync(script, logOneLine)
      const onTerminal = run('script', ['-qec', `${nodeBin} ${script}`, '/dev/null'])
      expect(onTerminal).toMatch(/INFO.*hello from the service/)
      expect(onTerminal).not.toContain('"level"')

      const onPipe = run(nodeBin, [script])
      expect(JSON.parse(onPipe.trim())).toMatchObject({ level: 30, msg: 'hello from the service' })
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
