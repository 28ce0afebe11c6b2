import { execFile } from 'node:child_process'
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import pg from 'pg'
import { freePort } from './ports.ts'
import { unprivilegedAccount } from './system-account.ts'

const run = promisify(execFile)

/** The newest PostgreSQL server installed from Debian's packages. */
function binDir(): string {
  const versions = readdirSync('/usr/lib/postgresql')
    .filter((name) => /^\d+$/.test(name))
    .sort((a, b) => Number(b) - Number(a))
  if (versions.length === 0) throw new Error('no PostgreSQL server under /usr/lib/postgresql')
  return `/usr/lib/postgresql/${versions[0]}/bin`
}

export interface OwnPostgres {
  /** postgres://postgres@127.0.0.1:port/postgres (trust). */
  readonly url: string
  readonly port: number
  /** Starts the server again after `stop()`, on the same port and data. */
  start(): Promise<void>
  /** A fast stop (connections are cut, as an operator's restart does). */
  stop(): Promise<void>
  /** `pg_ctl restart -m fast`. */
  restart(): Promise<void>
  /** One statement on the `postgres` database, on a connection of its own. */
  sql<T extends pg.QueryResultRow>(text: string): Promise<T[]>
  /** The server's own log, for failure messages. */
  log(): string
  /** Stops it (immediately) and removes its folder; safe to call twice. */
  destroy(): Promise<void>
}

/**
 * A PostgreSQL cluster of a test's own, for tests that stop, restart or lock it: `initdb` under a
 * temporary folder, trust authentication, listening on 127.0.0.1 on a free port, never the machine's
 * shared server. Under root it runs as the `postgres` account, which owns the folder.
 */
export async function startOwnPostgres(): Promise<OwnPostgres> {
  const bin = binDir()
  const dir = mkdtempSync(join(tmpdir(), 'trading-api-own-pg-'))
  const data = join(dir, 'data')
  const logFile = join(dir, 'server.log')
  const account = unprivilegedAccount('postgres')
  if (account) chownSync(dir, account.uid, account.gid)
  const options = { ...(account ?? {}), cwd: dir, env: { PATH: process.env.PATH ?? '', LANG: 'C.UTF-8' } }
  const port = await freePort()
  const ctl = (...args: string[]) => run(join(bin, 'pg_ctl'), ['-D', data, ...args], options)
  const serverOptions = [
    `-p ${port}`,
    '-c listen_addresses=127.0.0.1',
    `-c unix_socket_directories=${dir}`,
    '-c fsync=off',
    '-c synchronous_commit=off',
    '-c full_page_writes=off',
    '-c max_connections=100',
  ].join(' ')
  let destroyed = false
  const destroy = async () => {
    if (destroyed) return
    destroyed = true
    await ctl('-m', 'immediate', 'stop').catch(() => {})
    rmSync(dir, { recursive: true, force: true })
  }
  try {
    await run(
      join(bin, 'initdb'),
      ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync'],
      options,
    )
    const start = async () => void (await ctl('-o', serverOptions, '-l', logFile, '-w', '-t', '60', 'start'))
    await start()
    const url = `postgres://postgres@127.0.0.1:${port}/postgres`
    return {
      url,
      port,
      start,
      stop: async () => void (await ctl('-m', 'fast', '-w', 'stop')),
      restart: async () =>
        void (await ctl('-m', 'fast', '-o', serverOptions, '-l', logFile, '-w', 'restart')),
      async sql<T extends pg.QueryResultRow>(text: string) {
        const client = new pg.Client({ connectionString: url })
        await client.connect()
        try {
          return (await client.query<T>(text)).rows
        } finally {
          await client.end()
        }
      },
      log: () => (existsSync(logFile) ? readFileSync(logFile, 'utf8') : ''),
      destroy,
    }
  } catch (error) {
    await destroy()
    throw error
  }
}
