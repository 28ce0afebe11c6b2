import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import mysql from 'mysql2/promise'
import { freePort } from './ports.ts'
import { unprivilegedAccount } from './system-account.ts'

const run = promisify(execFile)

/** Debian's MariaDB server (`mariadb-server`), as scripts/ensure-test-deps.sh installs it. */
export const MARIADBD = '/usr/sbin/mariadbd'
const INSTALL_DB = '/usr/bin/mariadb-install-db'

export interface OwnMariadb {
  readonly port: number
  /** The server's socket, where root signs in without a password. */
  readonly socket: string
  /** A connection as root over the socket; the caller ends it. */
  connectAsRoot(): Promise<mysql.Connection>
  /** The server's own log, for failure messages. */
  log(): string
  /** Stops it and removes its folder; safe to call twice. */
  destroy(): Promise<void>
}

/** Resolves once the child has exited (at once when it already has). */
function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve()
  return new Promise((resolve) => child.once('exit', () => resolve()))
}

/**
 * A MariaDB server of a test's own: `mariadb-install-db` under a temporary folder, listening on
 * 127.0.0.1 on a free port, never a machine's shared server. Under root it runs as the `mysql`
 * account, which owns the folder. Root signs in over the socket without a password; the test makes
 * the users it connects as over TCP.
 */
export async function startOwnMariadb(): Promise<OwnMariadb> {
  const dir = mkdtempSync(join(tmpdir(), 'trading-api-own-mariadb-'))
  const data = join(dir, 'data')
  const socket = join(dir, 'mariadb.sock')
  const logFile = join(dir, 'server.log')
  const account = unprivilegedAccount('mysql')
  if (account) chownSync(dir, account.uid, account.gid)
  const options = { ...(account ?? {}), cwd: dir, env: { PATH: process.env.PATH ?? '', LANG: 'C.UTF-8' } }
  const port = await freePort()
  let server: ChildProcess | undefined
  let destroyed = false
  const destroy = async () => {
    if (destroyed) return
    destroyed = true
    if (server) {
      const gone = exited(server)
      server.kill('SIGTERM')
      const timer = setTimeout(() => server?.kill('SIGKILL'), 10_000)
      await gone
      clearTimeout(timer)
    }
    rmSync(dir, { recursive: true, force: true })
  }
  const connectAsRoot = () => mysql.createConnection({ socketPath: socket, user: 'root' })
  try {
    await run(
      INSTALL_DB,
      [
        '--no-defaults',
        `--datadir=${data}`,
        '--auth-root-authentication-method=normal',
        '--skip-test-db',
        '--skip-name-resolve',
      ],
      options,
    )
    server = spawn(
      MARIADBD,
      [
        '--no-defaults',
        `--datadir=${data}`,
        `--port=${port}`,
        '--bind-address=127.0.0.1',
        `--socket=${socket}`,
        `--pid-file=${join(dir, 'mariadb.pid')}`,
        `--log-error=${logFile}`,
        `--tmpdir=${dir}`,
        '--skip-name-resolve',
        '--skip-log-bin',
        '--innodb-buffer-pool-size=16M',
        '--innodb-log-file-size=8M',
        '--innodb-flush-log-at-trx-commit=0',
        '--max-connections=20',
      ],
      { ...options, stdio: 'ignore' },
    )
    const deadline = Date.now() + 60_000
    for (;;) {
      if (server.exitCode !== null) throw new Error(`mariadbd exited ${server.exitCode}`)
      try {
        await (await connectAsRoot()).end()
        break
      } catch (error) {
        if (Date.now() > deadline) throw error
        await new Promise((resolve) => setTimeout(resolve, 200))
      }
    }
    return {
      port,
      socket,
      connectAsRoot,
      log: () => (existsSync(logFile) ? readFileSync(logFile, 'utf8') : ''),
      destroy,
    }
  } catch (error) {
    const log = existsSync(logFile) ? readFileSync(logFile, 'utf8') : ''
    await destroy()
    throw new Error(`MariaDB did not start: ${(error as Error).message}\n${log}`)
  }
}
