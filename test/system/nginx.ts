import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { projectRoot } from '../helpers/project-root.ts'
import { waitForPort } from './processes.ts'

export const NGINX_BIN = '/usr/sbin/nginx'
/** The recipe's nginx file; the test runs exactly this, rendered. */
export const NGINX_TEMPLATE = join(projectRoot, 'deploy/nginx/trading-api.conf.template')
const execFileAsync = promisify(execFile)
const INSTANCE_SCRIPT = join(projectRoot, 'deploy/nginx-instance.sh')

/**
 * Fills the `${NAME}` placeholders of every line but comments (whose envsubst example names them all);
 * a placeholder without a value, or a value no placeholder took, is an error.
 */
export function renderTemplate(template: string, values: Record<string, string>): string {
  const used = new Set<string>()
  const fill = (line: string) =>
    line.replace(/\$\{([A-Z0-9_]+)\}/g, (_, name: string) => {
      const value = values[name]
      if (value === undefined) throw new Error(`template placeholder \${${name}} has no value`)
      used.add(name)
      return value
    })
  const text = template
    .split('\n')
    .map((line) => (line.trimStart().startsWith('#') ? line : fill(line)))
    .join('\n')
  const unused = Object.keys(values).filter((name) => !used.has(name))
  if (unused.length > 0) throw new Error(`template has no placeholder for ${unused.join(', ')}`)
  return text
}

/** One line of the recipe's access log (log_format trading_api). */
export interface AccessLine {
  request: string
  status: number
  requestId: string
  /** `127.0.0.1:8001`, one per try (`a, b` when nginx went on to the next instance). */
  upstreams: string[]
  line: string
}

export interface RunningNginx {
  readonly url: string
  readonly port: number
  /** The master process's id (its workers are its children). */
  readonly pid: number
  accessLines(): AccessLine[]
  /** nginx's own error logs (the main one and the server's). */
  errorLog(): string
  /** The recipe's deploy/nginx-instance.sh: takes an instance out of the rotation (`down`) or back. */
  setInstance(state: 'down' | 'up', address: string): Promise<void>
  /** The instance (`host:port`) that answered the request nginx logged under this id; waits for the line. */
  servedBy(requestId: string | null): Promise<string>
  stop(): Promise<void>
}

const ACCESS_LINE =
  /^\S+ \[[^\]]+\] "([^"]*)" (\d{3}) \d+ rid=(\S+) rt=\S+ upstream_status="[^"]*" upstream="([^"]*)"$/

/**
 * Renders the recipe into `dir` for the given instances and runs nginx on `port` in the foreground,
 * as the current user (root included: then its workers stay root too, so they can use `dir`). The
 * main file stands in for Debian's /etc/nginx/nginx.conf: it includes the recipe inside http {}.
 */
export async function startNginx(options: {
  dir: string
  port: number
  instances: readonly [string, string]
}): Promise<RunningNginx> {
  const { dir, port } = options
  mkdirSync(join(dir, 'logs'), { recursive: true })
  const site = renderTemplate(readFileSync(NGINX_TEMPLATE, 'utf8'), {
    LISTEN: `127.0.0.1:${port}`,
    SERVER_NAME: '127.0.0.1',
    LOG_DIR: join(dir, 'logs'),
    INSTANCE_1: options.instances[0],
    INSTANCE_2: options.instances[1],
  })
  writeFileSync(join(dir, 'trading-api.conf'), site)
  const asRoot = process.getuid?.() === 0
  writeFileSync(
    join(dir, 'nginx.conf'),
    [
      asRoot ? 'user root;' : '',
      'worker_processes 2;',
      `pid ${join(dir, 'nginx.pid')};`,
      `error_log ${join(dir, 'logs/error.log')} warn;`,
      'events { worker_connections 1024; }',
      'http {',
      `  client_body_temp_path ${join(dir, 'client_body')};`,
      `  proxy_temp_path ${join(dir, 'proxy')};`,
      `  fastcgi_temp_path ${join(dir, 'fastcgi')};`,
      `  uwsgi_temp_path ${join(dir, 'uwsgi')};`,
      `  scgi_temp_path ${join(dir, 'scgi')};`,
      '  default_type application/octet-stream;',
      `  include ${join(dir, 'trading-api.conf')};`,
      '}',
      '',
    ].join('\n'),
  )
  const args = ['-p', dir, '-e', join(dir, 'logs/error.log'), '-c', join(dir, 'nginx.conf')]
  const child: ChildProcess = spawn(NGINX_BIN, [...args, '-g', 'daemon off;'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString()
  })
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString()
  })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  const read = (file: string) => (existsSync(join(dir, file)) ? readFileSync(join(dir, file), 'utf8') : '')
  const errorLog = () => `${output}${read('logs/error.log')}${read('logs/trading-api.error.log')}`
  try {
    await waitForPort(port, 10_000, () => child.exitCode !== null)
  } catch (error) {
    child.kill('SIGKILL')
    throw new Error(`nginx did not start: ${String(error)}\n${errorLog()}`)
  }

  const accessLines = (): AccessLine[] =>
    read('logs/trading-api.access.log')
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => {
        const match = ACCESS_LINE.exec(line)
        if (!match) throw new Error(`access log line not in the recipe's format: ${line}`)
        const [, request = '', status = '', requestId = '', upstreams = ''] = match
        return { request, status: Number(status), requestId, upstreams: upstreams.split(', '), line }
      })

  return {
    url: `http://127.0.0.1:${port}`,
    port,
    pid: child.pid as number,
    accessLines,
    errorLog,
    async servedBy(requestId) {
      if (!requestId) throw new Error('the answer carried no X-Request-Id')
      // nginx writes the line once the answer has gone out, so it may follow the answer by a moment.
      const deadline = Date.now() + 5000
      for (;;) {
        const line = accessLines().find((entry) => entry.requestId === requestId)
        if (line) return line.upstreams.at(-1) ?? ''
        if (Date.now() > deadline) throw new Error(`nginx logged no request ${requestId}`)
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
    },
    async setInstance(state, address) {
      // Not execFileSync: the test's load goes on while the script reloads nginx.
      await execFileAsync(INSTANCE_SCRIPT, [state, address], {
        env: {
          ...process.env,
          NGINX_SITE: join(dir, 'trading-api.conf'),
          NGINX_CMD: [NGINX_BIN, ...args].join(' '),
        },
      })
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM')
      await exited
    },
  }
}
