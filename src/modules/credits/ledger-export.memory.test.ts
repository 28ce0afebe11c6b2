import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { sql } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { type CliEnvironment, createCliEnvironment } from '../../../test/helpers/cli.ts'
import { createUser } from '../../../test/helpers/factories.ts'
import { projectRoot } from '../../../test/helpers/project-root.ts'
import { openConfiguredDatabase } from '../../app.ts'
import { loadConfig } from '../../config.ts'
import { createLedgerExportRepository } from './ledger-export.repository.ts'
import { writeLedgerExport } from './ledger-export.ts'

// The export of a large ledger keeps its memory flat: it holds one batch at a time, and waits while
// its output is full. 200,000 rows on PostgreSQL (60,000 on PGlite, whose inserts and scans are many
// times slower), exported in this process (the JS heap, measured after forced collections) and by
// the CLI as a child process (its resident memory).

const onPostgres = Boolean(process.env.TEST_DATABASE_URL)
const ROWS = onPostgres ? 200_000 : 60_000
// The heap is sampled ten times along the export.
const SAMPLE_EVERY = ROWS / 10
// The CLI's JS heap limit in the child: what it needs to start and hold one batch, far below the rows.
const HEAP_CAP_MB = 64
const MB = 1024 * 1024
const FROM = '2026-11-30'
const TO = '2026-12-02'
// Each line of the CSV ends with CRLF, and no field holds one.
const lineCount = (chunk: string) => chunk.split('\r\n').length - 1

let cliEnv: CliEnvironment
// With the CLI's long statement time-out: the insert of all the rows is one statement.
const openCliDatabase = () => openConfiguredDatabase(loadConfig(cliEnv.env, projectRoot), { long: true })

function forcedGc(): () => void {
  setFlagsFromString('--expose-gc')
  return runInNewContext('gc') as () => void
}

beforeAll(async () => {
  cliEnv = await createCliEnvironment()
  expect((await cliEnv.run(['migrate'])).code).toBe(0)
  const started = Date.now()
  const database = await openCliDatabase()
  try {
    const { user } = await createUser(database.db)
    // One statement: ROWS credits of 1.5, each balance_after the running sum, one millisecond apart,
    // with a reason that needs quoting in the CSV.
    await database.db.execute(sql`
      insert into credit_transactions (user_id, amount, kind, reference, reason, balance_after, created_at)
      select ${user.id}, 1.5, 'feature_use', 'feature-' || (g % 7), 'bulk row ' || g || ', for the test',
        g * 1.5, ${FROM}::timestamptz + g * interval '1 millisecond'
      from generate_series(1, ${ROWS}) g`)
  } finally {
    await database.close()
  }
  console.log(`${ROWS} ledger rows inserted in ${((Date.now() - started) / 1000).toFixed(1)} s`)
}, 300_000)

afterAll(() => cliEnv.cleanup())

describe(`ledger export of ${ROWS.toLocaleString('en')} rows`, () => {
  test('in process: the heap while writing is the heap before, every row written', {
    timeout: 300_000,
  }, async () => {
    const gc = forcedGc()
    const database = await openCliDatabase()
    try {
      let lines = 0
      let bytes = 0
      const heap: { lines: number; mb: number }[] = []
      let nextSample = SAMPLE_EVERY
      // A slow reader: a small buffer, each chunk taken on a later turn, and once (at the first sample)
      // a stall of 1.5 s, time enough for a writer that did not wait to pile up several batches.
      let largestChunk = 0
      let mostBuffered = 0
      let stalled = false
      const sink = new Writable({
        highWaterMark: 16 * 1024,
        decodeStrings: false,
        write(chunk: string, _encoding, done) {
          lines += lineCount(chunk)
          bytes += Buffer.byteLength(chunk)
          largestChunk = Math.max(largestChunk, chunk.length)
          mostBuffered = Math.max(mostBuffered, sink.writableLength)
          if (lines >= nextSample) {
            gc()
            heap.push({ lines, mb: process.memoryUsage().heapUsed / MB })
            nextSample += SAMPLE_EVERY
          }
          if (!stalled && lines >= SAMPLE_EVERY) {
            stalled = true
            setTimeout(done, 1_500)
          } else setImmediate(done)
        },
      })
      gc()
      const before = process.memoryUsage().heapUsed / MB
      const started = Date.now()
      const repo = createLedgerExportRepository({ db: database.db })
      const written = await writeLedgerExport(repo.batches({ from: FROM, to: TO }), 'csv', sink)
      await new Promise<void>((resolve) => sink.end(resolve))
      const seconds = (Date.now() - started) / 1000
      expect(written).toBe(ROWS)
      expect(lines).toBe(ROWS + 1) // and the header
      const peak = Math.max(...heap.map((sample) => sample.mb))
      console.log(
        `in process: ${ROWS} rows, ${(bytes / MB).toFixed(1)} MB of CSV in ${seconds.toFixed(1)} s; heap before ` +
          `${before.toFixed(1)} MB, after ${heap[0]?.lines} lines ${heap[0]?.mb.toFixed(1)} MB, peak of ` +
          `${heap.length} samples (every ${SAMPLE_EVERY} lines) ${peak.toFixed(1)} MB`,
      )
      expect(heap.length).toBeGreaterThanOrEqual(9)
      // Holding the rows would take far more than the CSV they make (over 100 bytes a row: 23 MB for
      // 200,000 rows); one batch is well under 10 MB.
      expect(bytes).toBeGreaterThan(ROWS * 100)
      expect(peak - before).toBeLessThan(10)
      // The writer waited for the reader: never more than the chunk being read and the one after it.
      expect(mostBuffered).toBeLessThanOrEqual(2 * largestChunk)
    } finally {
      await database.close()
    }
  })

  test(`the CLI process: resident memory after ${SAMPLE_EVERY.toLocaleString('en')} rows is about its peak, every row received`, {
    timeout: 300_000,
  }, async () => {
    const child = spawn(
      join(projectRoot, 'node_modules/.bin/node'),
      ['src/cli.ts', 'ledger:export', '--from', FROM, '--to', TO, '--format', 'jsonl'],
      // The JS heap capped: holding the rows (or the output) would end the process out of memory.
      {
        cwd: projectRoot,
        env: { ...cliEnv.env, NODE_OPTIONS: `--max-old-space-size=${HEAP_CAP_MB}` },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    )
    const rssMb = () => {
      try {
        const status = readFileSync(`/proc/${child.pid}/status`, 'utf8')
        return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1]) / 1024
      } catch {
        return Number.NaN // the process has ended
      }
    }
    let lines = 0
    let bytes = 0
    let firstId = 0
    let lastLine = ''
    let partial = ''
    let atFirstRows = Number.NaN
    let peak = 0
    let stderr = ''
    const sampler = setInterval(() => {
      const rss = rssMb()
      if (!Number.isNaN(rss) && lines >= SAMPLE_EVERY) peak = Math.max(peak, rss)
    }, 50)
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk
    })
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      const parts = (partial + chunk).split('\n')
      partial = parts.pop() ?? ''
      if (lines === 0 && parts[0]) firstId = JSON.parse(parts[0]).id
      lines += parts.length
      lastLine = parts.at(-1) ?? lastLine
      bytes += Buffer.byteLength(chunk)
      if (Number.isNaN(atFirstRows) && lines >= SAMPLE_EVERY) atFirstRows = rssMb()
    })
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve))
    clearInterval(sampler)
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' })
    expect({ lines, partial }).toEqual({ lines: ROWS, partial: '' })
    expect(JSON.parse(lastLine)).toMatchObject({
      id: firstId + ROWS - 1,
      balance_after: (ROWS * 1.5).toFixed(4),
    })
    console.log(
      `CLI process (heap capped at ${HEAP_CAP_MB} MB): ${lines} rows, ${(bytes / MB).toFixed(1)} MB of JSONL; resident memory after ${SAMPLE_EVERY} rows ` +
        `${atFirstRows.toFixed(0)} MB, peak after that ${peak.toFixed(0)} MB`,
    )
    // On PostgreSQL the output alone is more than the heap the process was allowed (over 370 bytes
    // a row of JSONL); PGlite's smaller ledger checks every row comes out under the same cap.
    expect(bytes).toBeGreaterThan(ROWS * 370)
    if (onPostgres) expect(bytes).toBeGreaterThan(HEAP_CAP_MB * MB)
    // On PostgreSQL the resident memory is the process's own; with PGlite it also holds the embedded
    // database's buffer cache, which fills with the table's pages as the scan reads them.
    if (cliEnv.server) expect(peak - atFirstRows).toBeLessThan(40)
  })
})
