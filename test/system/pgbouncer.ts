import { type ChildProcess, spawn } from 'node:child_process'
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { unprivilegedAccount } from '../helpers/system-account.ts'
import { waitForPort } from './processes.ts'

export const PGBOUNCER_BIN = '/usr/sbin/pgbouncer'
/** What deploy/README.md's PgBouncer section gives as the databases' connect_query. */
export const PGBOUNCER_CONNECT_QUERY =
  'SET statement_timeout = 5000; SET lock_timeout = 3000; SET idle_in_transaction_session_timeout = 5000'

export interface RunningPgBouncer {
  /** The server URL with PgBouncer's host and port instead of PostgreSQL's (same user, same database). */
  via(databaseUrl: string): string
  log(): string
  stop(): Promise<void>
}

/**
 * PgBouncer in transaction pooling mode on `port`, in front of the PostgreSQL server of `serverUrl`
 * (every database on it, trust authentication for its user), fewer server connections than the
 * instances' pools hold, so their transactions really do share server connections. PgBouncer refuses
 * to run as root: under root it runs as `nobody`, owning its own folder.
 */
export async function startPgBouncer(serverUrl: string, port: number): Promise<RunningPgBouncer> {
  const server = new URL(serverUrl)
  const user = decodeURIComponent(server.username || 'postgres')
  const dir = mkdtempSync(join(tmpdir(), 'trading-api-pgbouncer-'))
  writeFileSync(join(dir, 'userlist.txt'), `"${user}" ""\n`)
  writeFileSync(
    join(dir, 'pgbouncer.ini'),
    [
      '[databases]',
      // The time-outs the instances cannot set through the pooler (deploy/README.md, PgBouncer), on every
      // server connection PgBouncer opens: the defaults of DATABASE_*_TIMEOUT_MS.
      `* = host=${server.hostname} port=${server.port || '5432'} connect_query='${PGBOUNCER_CONNECT_QUERY}'`,
      '',
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${join(dir, 'userlist.txt')}`,
      'pool_mode = transaction',
      'default_pool_size = 5',
      'max_client_conn = 200',
      `logfile = ${join(dir, 'pgbouncer.log')}`,
      `pidfile = ${join(dir, 'pgbouncer.pid')}`,
      '',
    ].join('\n'),
  )
  const runAs = unprivilegedAccount('nobody')
  if (runAs) chownSync(dir, runAs.uid, runAs.gid)
  const child: ChildProcess = spawn(PGBOUNCER_BIN, [join(dir, 'pgbouncer.ini')], {
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(runAs ?? {}),
  })
  let output = ''
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString()
  })
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString()
  })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  const log = () =>
    `${output}${existsSync(join(dir, 'pgbouncer.log')) ? readFileSync(join(dir, 'pgbouncer.log'), 'utf8') : ''}`
  try {
    await waitForPort(port, 10_000, () => child.exitCode !== null)
  } catch (error) {
    child.kill('SIGKILL')
    throw new Error(`pgbouncer did not start: ${String(error)}\n${log()}`)
  }
  return {
    via(databaseUrl) {
      const url = new URL(databaseUrl)
      url.hostname = '127.0.0.1'
      url.port = String(port)
      return url.toString()
    },
    log,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM')
      await exited
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
