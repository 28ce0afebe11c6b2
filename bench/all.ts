import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import { join } from 'node:path'

/**
 * `npm run bench`: every benchmark, one after another, each in its own process (a bench's leftovers,
 * heap and open sockets never weigh on the next). With BENCH_JSON=path, each writes its figures to a
 * file of its own and this collects them into one document at `path`, every bench's targets first. Exits 1 if any bench did.
 */
const BENCHES = [
  'proxy',
  'credits',
  'chat',
  'realtime',
  'ai',
  'start',
  'rate-limit',
  'deployed',
  'laravel-import',
] as const

const target = process.env.BENCH_JSON
const scratch = mkdtempSync(join(os.tmpdir(), 'bench-json-'))
const results: Array<{ bench: string; exitCode: number | null; figures?: unknown }> = []
try {
  for (const bench of BENCHES) {
    console.log(`\n=== bench:${bench}`)
    const json = join(scratch, `${bench}.json`)
    const run = spawnSync(process.execPath, [join(import.meta.dirname, `${bench}.ts`)], {
      stdio: 'inherit',
      env: { ...process.env, ...(target ? { BENCH_JSON: json } : {}) },
    })
    let figures: unknown
    try {
      figures = target ? JSON.parse(readFileSync(json, 'utf8')) : undefined
    } catch {
      figures = undefined
    }
    results.push({ bench, exitCode: run.status, figures })
  }
  if (target) {
    // Every bench's targets in one place, by name, besides each bench's whole figures.
    const targets = Object.fromEntries(
      results.flatMap(({ bench, figures }) =>
        Object.entries(
          (figures as { figures?: { targets?: object } } | undefined)?.figures?.targets ?? {},
        ).map(([name, result]) => [name, { bench, ...result }]),
      ),
    )
    const document = { at: new Date().toISOString(), targets, results }
    writeFileSync(target, `${JSON.stringify(document, null, 2)}\n`)
    console.log(`\nfigures of every bench written to ${target}`)
  }
} finally {
  rmSync(scratch, { recursive: true, force: true })
}
const failed = results.filter((result) => result.exitCode !== 0).map((result) => result.bench)
console.log(failed.length ? `\nfailed: ${failed.join(', ')}` : '\nevery bench exited 0')
if (failed.length) process.exitCode = 1
